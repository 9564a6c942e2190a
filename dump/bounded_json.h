#pragma once
// JSON read from a file (manifest headers and trailers, checkpoint headers): bounded before it is
// built, strict when it is read.
//
// ParseBoundedJson first runs a SAX pass over the text that keeps no value: it checks the nesting
// depth and adds up the memory the document would take once built (an estimate per value of
// nlohmann::json's layout with libstdc++: 16 bytes per value slot, an object's map and member
// nodes, an array's growth, each string's heap block). Only a text whose estimate stays within
// `memory_factor` times its own size (plus 64 KiB) is parsed into a document. So memory to read
// such JSON is a small multiple of the bytes read, whatever the bytes say. Real headers estimate
// at about 10 times their size; the factor leaves room.
//
// JsonField and its helpers read keys strictly: a missing key, a value of another type or a
// number out of its bounds throws JsonFormatError naming the key's dotted path
// ("missing key \"shard.count\"", "key \"shard.count\": -1 is not a whole number from 0 to ...").
// nlohmann's own get<uint32_t>() would have turned -1 into 4294967295 and 2^32 into 0.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace ledgerdiff::dump {

struct JsonBounds {
  size_t max_depth = 16;
  double memory_factor = 20;  // the document's estimated memory / the text's size (plus 64 KiB)
};

// The document, or an error message (no file name: the caller adds it).
Result<nlohmann::json> ParseBoundedJson(std::string_view text, const JsonBounds& bounds = {});

struct JsonFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// obj[key] where obj is at dotted path `where` ("" at the top). Throws JsonFormatError.
const nlohmann::json& JsonField(const nlohmann::json& obj, const std::string& where, const char* key);
const nlohmann::json& JsonObject(const nlohmann::json& obj, const std::string& where, const char* key);
const nlohmann::json& JsonArray(const nlohmann::json& obj, const std::string& where, const char* key,
                                size_t max_size);
std::string JsonString(const nlohmann::json& obj, const std::string& where, const char* key);
bool JsonBool(const nlohmann::json& obj, const std::string& where, const char* key);
// A whole number from 0 to `max` (a JSON unsigned integer; -1, 1.5 or "1" are errors).
uint64_t JsonUnsigned(const nlohmann::json& obj, const std::string& where, const char* key, uint64_t max);
// The same, or nullopt for a JSON null (the key must still be present).
std::optional<uint64_t> JsonNullableUnsigned(const nlohmann::json& obj, const std::string& where, const char* key,
                                             uint64_t max);
std::optional<std::string> JsonNullableString(const nlohmann::json& obj, const std::string& where, const char* key);
// "where.key" (or "key" at the top).
std::string JsonPath(const std::string& where, const char* key);

}  // namespace ledgerdiff::dump
