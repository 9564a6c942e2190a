// manifest merge, manifest show: thin shells over dump/shard.h.
#include <fmt/format.h>

#include "cli/command.h"
#include "dump/manifest.h"
#include "dump/shard.h"

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
  f->merge->add_option("--out", f->out, "The merged manifest (.ldm)")->required();
  f->merge->add_option("--manifest-detail", f->detail, "compact (default) or full")
      ->check(CLI::IsMember({"compact", "full"}));
  f->merge->add_option("PART", f->parts, "Partial manifests, one per shard (any order)")->required();
  f->show = sub->add_subcommand("show", "Print a manifest's header, coverage and roots");
  f->merge->fallthrough();  // --format after the sub-subcommand
  f->show->fallthrough();
  f->show->add_option("FILE", f->file, "A manifest (.ldm), complete or partial")->required();
  Action a;
  a.run = [f](Context&) -> Result<Outcome> {
    Outcome out;
    if (f->merge->parsed()) {
      const auto detail = f->detail == "full" ? dump::ManifestDetail::kFull : dump::ManifestDetail::kCompact;
      LD_ASSIGN_OR_RETURN(auto summary, dump::MergeManifests(f->parts, f->out, detail));
      out.json = dump::DigestSummaryToJson(summary);
      out.json["parts"] = f->parts.size();
      out.text = fmt::format("merged {} parts into {}\n", f->parts.size(), f->out) + dump::RenderDigestText(summary);
      return out;
    }
    LD_ASSIGN_OR_RETURN(auto info, dump::ReadManifestInfo(f->file));
    out.json = dump::ManifestInfoToJson(info);
    out.text = dump::RenderManifestText(info);
    return out;
  };
  return a;
}

}  // namespace ledgerdiff::cli
