#include "dump/bounded_json.h"

#include <fmt/format.h>

#include <vector>

namespace ledgerdiff::dump {

namespace {

// Estimated bytes of the document (see the header): nlohmann::json with libstdc++ and glibc malloc
// (16 bytes of chunk overhead per block).
constexpr uint64_t kSlot = 16;             // a basic_json value
constexpr uint64_t kArraySlot = 2 * kSlot;  // a vector element, with the vector's growth
constexpr uint64_t kMember = 96;           // a std::map node: links, key std::string, value
constexpr uint64_t kObject = 64;           // the heap-allocated std::map
constexpr uint64_t kArray = 40;            // the heap-allocated std::vector
constexpr uint64_t kString = 48;           // the heap-allocated std::string

uint64_t StringHeap(size_t n) { return n > 15 ? n + 1 + 16 : 0; }  // beyond the small-string buffer

class Estimator : public nlohmann::json::json_sax_t {
 public:
  explicit Estimator(size_t max_depth) : max_depth_(max_depth) {}
  bool null() override { return Value(0); }
  bool boolean(bool) override { return Value(0); }
  bool number_integer(number_integer_t) override { return Value(0); }
  bool number_unsigned(number_unsigned_t) override { return Value(0); }
  bool number_float(number_float_t, const string_t&) override { return Value(0); }
  bool string(string_t& s) override { return Value(kString + StringHeap(s.size())); }
  bool binary(binary_t&) override { return false; }  // not JSON text
  bool start_object(std::size_t) override {
    if (!Value(kObject)) return false;
    return Push(true);
  }
  bool key(string_t& k) override {
    bytes_ += kMember + StringHeap(k.size());
    return true;
  }
  bool end_object() override { return Pop(); }
  bool start_array(std::size_t) override {
    if (!Value(kArray)) return false;
    return Push(false);
  }
  bool end_array() override { return Pop(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    error_ = ex.what();
    return false;
  }

  uint64_t bytes() const { return bytes_; }
  bool too_deep() const { return too_deep_; }
  const std::string& error() const { return error_; }

 private:
  // A value of `own` bytes in its parent: a member's slot is in its node (counted by key()).
  bool Value(uint64_t own) {
    if (stack_.empty()) bytes_ += kSlot;
    else if (!stack_.back()) bytes_ += kArraySlot;
    bytes_ += own;
    return true;
  }
  bool Push(bool object) {
    if (stack_.size() >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    stack_.push_back(object);
    return true;
  }
  bool Pop() {
    stack_.pop_back();
    return true;
  }
  size_t max_depth_;
  std::vector<bool> stack_;
  uint64_t bytes_ = 0;
  bool too_deep_ = false;
  std::string error_;
};

std::string Shown(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

}  // namespace

Result<nlohmann::json> ParseBoundedJson(std::string_view text, const JsonBounds& bounds) {
  Estimator e(bounds.max_depth);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(text.begin(), text.end(), &e);
  } catch (const std::exception& ex) {
    return Status::Usagef("not JSON ({})", ex.what());
  }
  if (!ok) {
    if (e.too_deep()) return Status::Usagef("JSON nested deeper than {} levels", bounds.max_depth);
    return Status::Usagef("not JSON ({})", e.error().empty() ? "binary value" : e.error());
  }
  const double limit = bounds.memory_factor * static_cast<double>(text.size()) + 65536.0;
  if (static_cast<double>(e.bytes()) > limit)
    return Status::Usagef("JSON of {} bytes would take {} bytes of memory once read (more than {} times its size)",
                          text.size(), e.bytes(), bounds.memory_factor);
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const std::exception& ex) {
    return Status::Usagef("not JSON ({})", ex.what());
  }
}

std::string JsonPath(const std::string& where, const char* key) { return where.empty() ? key : where + "." + key; }

const nlohmann::json& JsonField(const nlohmann::json& obj, const std::string& where, const char* key) {
  if (!obj.is_object()) throw JsonFormatError(fmt::format("\"{}\" is not an object", where.empty() ? "(top)" : where));
  auto it = obj.find(key);
  if (it == obj.end()) throw JsonFormatError(fmt::format("missing key \"{}\"", JsonPath(where, key)));
  return *it;
}

const nlohmann::json& JsonObject(const nlohmann::json& obj, const std::string& where, const char* key) {
  const auto& v = JsonField(obj, where, key);
  if (!v.is_object()) throw JsonFormatError(fmt::format("key \"{}\": {} is not an object", JsonPath(where, key), Shown(v)));
  return v;
}

const nlohmann::json& JsonArray(const nlohmann::json& obj, const std::string& where, const char* key,
                                size_t max_size) {
  const auto& v = JsonField(obj, where, key);
  if (!v.is_array()) throw JsonFormatError(fmt::format("key \"{}\": {} is not an array", JsonPath(where, key), Shown(v)));
  if (v.size() > max_size)
    throw JsonFormatError(fmt::format("key \"{}\": {} elements, more than the bound of {}", JsonPath(where, key),
                                      v.size(), max_size));
  return v;
}

std::string JsonString(const nlohmann::json& obj, const std::string& where, const char* key) {
  const auto& v = JsonField(obj, where, key);
  if (!v.is_string()) throw JsonFormatError(fmt::format("key \"{}\": {} is not a string", JsonPath(where, key), Shown(v)));
  return v.get<std::string>();
}

bool JsonBool(const nlohmann::json& obj, const std::string& where, const char* key) {
  const auto& v = JsonField(obj, where, key);
  if (!v.is_boolean())
    throw JsonFormatError(fmt::format("key \"{}\": {} is not true or false", JsonPath(where, key), Shown(v)));
  return v.get<bool>();
}

uint64_t JsonUnsigned(const nlohmann::json& obj, const std::string& where, const char* key, uint64_t max) {
  const auto& v = JsonField(obj, where, key);
  // nlohmann parses a non-negative integer literal as number_unsigned; -1 is number_integer.
  if (!v.is_number_unsigned() || v.get<uint64_t>() > max)
    throw JsonFormatError(
        fmt::format("key \"{}\": {} is not a whole number from 0 to {}", JsonPath(where, key), Shown(v), max));
  return v.get<uint64_t>();
}

std::optional<uint64_t> JsonNullableUnsigned(const nlohmann::json& obj, const std::string& where, const char* key,
                                             uint64_t max) {
  if (JsonField(obj, where, key).is_null()) return std::nullopt;
  return JsonUnsigned(obj, where, key, max);
}

std::optional<std::string> JsonNullableString(const nlohmann::json& obj, const std::string& where, const char* key) {
  if (JsonField(obj, where, key).is_null()) return std::nullopt;
  return JsonString(obj, where, key);
}

}  // namespace ledgerdiff::dump
