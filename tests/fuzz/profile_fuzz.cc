// Fuzzes the profile parsers (dump/profile.h): the input is the text of a `--profile FILE`
// (ParseProfileSpecJson, and LoadProfileSpec reading it from a file), and the same text read as
// the resolved profile a manifest header stores (ResolvedProfileFromJson, after the header's
// bounded parse, dump/bounded_json.h).
//
// Properties: no crash (no exception escapes), no sanitizer report, no allocation beyond
// -malloc_limit_mb; a bad profile is a usage error (exit 2) naming the file; the file and the
// text give the same verdict; a parsed spec's lookup rules are one per lookup table; a resolved
// profile read back from its own JSON form is the same (same fingerprint).

#include <set>
#include <string>

#include "dump/bounded_json.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "tests/fuzz/fuzz_util.h"

using namespace ledgerdiff;
using namespace ledgerdiff::dump;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz::ScratchDir() + "/profile.json";
  const std::string text(reinterpret_cast<const char*>(data), size);

  auto spec = ParseProfileSpecJson(text, path);
  if (spec.ok()) {
    std::set<std::string> lookups;
    for (const LookupRule& l : LookupRules(*spec))
      LD_FUZZ_CHECK(lookups.insert(l.table).second, "lookup table {} listed twice", l.table);
  } else {
    fuzz::CheckBadInput(spec.status(), path, "ParseProfileSpecJson");
  }
  // `--profile FILE`: the same verdict from the file (names that are not files are built-ins).
  fuzz::WriteFile(path, text.data(), text.size());
  auto loaded = LoadProfileSpec(path);
  LD_FUZZ_CHECK(loaded.ok() == spec.ok() && loaded.status().message() == spec.status().message(),
                "text: \"{}\", file: \"{}\"", spec.status().message(), loaded.status().message());

  // The resolved form a manifest header holds.
  auto j = ParseBoundedJson(text);
  if (!j.ok()) return 0;
  auto resolved = ResolvedProfileFromJson(*j);
  if (!resolved.ok()) {
    fuzz::CheckBadInput(resolved.status(), "", "ResolvedProfileFromJson");
    return 0;
  }
  const nlohmann::json again = ResolvedProfileToJson(*resolved);
  auto back = ResolvedProfileFromJson(again);
  LD_FUZZ_CHECK(back.ok(), "a resolved profile does not read back from its own JSON: {}", back.status().message());
  LD_FUZZ_CHECK(ProfileFingerprint(*back) == ProfileFingerprint(*resolved), "fingerprint changed on a round trip");
  (void)resolved->ExcludedColumns();
  return 0;
}
