// manifest merge, manifest show: thin shells over dump/shard.h. Exit 1 when the manifest (or the
// merged parts) holds a divergent verify-range outcome.
#include <fmt/format.h>

#include "cli/command.h"
#include "core/atomic_file.h"
#include "dump/manifest.h"
#include "dump/shard.h"
#include "report/dump_text_json.h"

namespace ledgerdiff::cli {

Action SetupManifest(CLI::App* sub) {
  struct Flags {
    std::string out, detail = "compact", file;
    std::vector<std::string> parts;
    CLI::App* merge = nullptr;
    CLI::App* show = nullptr;
  };
  auto f = std::make_shared<Flags>();
  sub->require_subcommand(1);
  f->merge = sub->add_subcommand("merge", "Join the partial manifests of `digest --shards N` into one manifest");
  f->merge->add_option("--out", f->out, "The merged manifest (.ldm)")->required()->check(WritableFile());
  f->merge->add_option("--manifest-detail", f->detail, "compact (default) or full")
      ->check(CLI::IsMember({"compact", "full"}));
  f->merge->add_option("PART", f->parts, "Partial manifests, one per shard (any order)")->required();
  f->show = sub->add_subcommand("show", "Print a manifest's header, coverage and roots");
  f->merge->fallthrough();  // --format after the sub-subcommand
  f->show->fallthrough();
  f->show->add_option("FILE", f->file, "A manifest (.ldm), complete or partial")->required();
  Action a;
  // Every manifest read is a regular file, refused before anything is written (a FIFO would block).
  a.check = [f]() -> Status {
    if (f->merge->parsed()) {
      for (const auto& part : f->parts) LD_RETURN_IF_ERROR(CheckRegularFile(part, "manifest " + part));
      return Status::Ok();
    }
    return CheckRegularFile(f->file, "manifest " + f->file);
  };
  a.run = [f](Context&) -> Result<Outcome> {
    Outcome out;
    if (f->merge->parsed()) {
      const auto detail = f->detail == "full" ? dump::ManifestDetail::kFull : dump::ManifestDetail::kCompact;
      LD_ASSIGN_OR_RETURN(auto merged, dump::MergeManifests(f->parts, f->out, detail));
      out.json = report::MergedToJson(merged, f->parts.size());
      out.text = report::RenderMergedText(merged, f->parts.size(), f->out);
      // verify-range parts: the exit code is the joined verdict, as verify-range's own.
      if (merged.comparison) out.exit_code = merged.comparison->identical ? 0 : 1;
      return out;
    }
    LD_ASSIGN_OR_RETURN(auto info, dump::ReadManifestInfo(f->file));
    out.json = report::ManifestInfoToJson(info);
    out.text = report::RenderManifestText(info);
    out.exit_code = info.comparison && !info.comparison->identical ? 1 : 0;
    return out;
  };
  return a;
}

}  // namespace ledgerdiff::cli
