#include "diff/side_stream.h"

#include <fmt/format.h>

#include "dump/canonical.h"

namespace ledgerdiff::diff {

Result<bool> SideStream::Seek(Ledger l) {
  while (!have || chunk.range.to < l) {
    pos = 0;
    if (reader) {
      LD_ASSIGN_OR_RETURN(bool more, reader->Next(chunk));
      if (!more) return false;
    } else {
      if (!queue.Pop(chunk)) {
        Status s = queue.status();
        if (!s.ok()) return s;
        return false;
      }
    }
    have = true;
  }
  while (pos < chunk.ledgers.size() && chunk.ledgers[pos] < l) ++pos;
  return chunk.range.contains(l);
}

Status SideStream::Drain() {
  if (!reader) return Status::Ok();
  for (;;) {
    LD_ASSIGN_OR_RETURN(bool more, reader->Next(chunk));
    if (!more) return Status::Ok();
  }
}

Result<pg::Connection*> SideStream::InSnapshot() {
  if (!gate.Wait()) {
    Stop();
    Status st = queue.status();
    return st.ok() ? Status::Runtimef("{}: the digest ended without a snapshot", Describe(source)) : st;
  }
  return &gate.in_snapshot();
}

Result<LedgerRows> FetchRows(pg::Connection& conn, const std::string& schema, const dump::ResolvedTable& table,
                             Ledger ledger) {
  LedgerRows out;
  std::vector<std::string_view> fields;
  Status s = conn.CopyOut(dump::CanonicalCopyWithFlip(table, schema, {ledger, ledger}), [&](std::string_view line) {
    pg::SplitCopyFields(line, fields);
    if (fields.size() < 2) return Status::Runtimef("a row of {} without its fields", table.name);
    RowValues r;
    // Field 0 is the ledger, the last one the flipped flag; the canonical columns between.
    for (size_t i = 1; i + 1 < fields.size(); ++i) r.push_back(dump::UnescapeCopyField(fields[i]));
    out.rows.push_back(std::move(r));
    out.stored_flipped.push_back(pg::TextIsTrue(fields.back()));
    return Status::Ok();
  });
  if (!s.ok()) return s.With(fmt::format("rows of {} at ledger {}", table.name, ledger));
  return out;
}

}  // namespace ledgerdiff::diff
