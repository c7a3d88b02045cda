#include "ringtrain/exchange/safetensors.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/input_file.hpp"
#include "ringtrain/core/json_text.hpp"

namespace ringtrain {
namespace {

using json = nlohmann::ordered_json;

// Headers beyond this are refused unread, as the format's reference reader (Hugging Face's
// safetensors) refuses them: a garbage length must not allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

size_t dtype_bytes(SafeDType t) {
  return t == SafeDType::f32 ? 4 : 8;
}

// Note: the format is little-endian; ringtrain runs on little-endian machines only (x86-64,
// aarch64), so the bytes are the values' own, and this check documents the assumption.
static_assert(sizeof(float) == 4, "safetensors F32 needs 32-bit floats");

void put_u64(std::vector<char>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

std::string header_text(const SafeTensors& file) {
  json header = json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  uint64_t offset = 0;
  for (const SafeTensor& t : file.tensors) {
    RT_CHECK(t.bytes.size() == static_cast<size_t>(t.numel()) * dtype_bytes(t.dtype),
             "safetensors: tensor ", t.name, " ", shape_str(t.shape), " has ", t.bytes.size(),
             " bytes, expected ", t.numel(), " x ", dtype_bytes(t.dtype));
    header[t.name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  // Invalid UTF-8 in a name or a metadata text becomes U+FFFD rather than failing the export.
  std::string text = json_text(header);
  // Padded with spaces to a multiple of 8 bytes, as the reference writer does: the data then
  // starts aligned, so a reader may view it in place.
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

// Refuses a file whose first bytes (`start`, up to 9 of the file's `size`) are not an 8-byte
// header length that fits the file and the first byte of a JSON object.
void check_start(const std::string& path, const std::vector<char>& start, uint64_t size) {
  RT_CHECK(size >= 8, "safetensors: ", path, " is ", size,
           " bytes long, too short for a safetensors file (an 8-byte header length first)");
  const uint64_t n = get_u64(start.data());
  RT_CHECK(n <= kMaxHeaderBytes, "safetensors: ", path, ": the header length ", n,
           " is over the format's limit of ", kMaxHeaderBytes,
           " bytes: not a safetensors file, or corrupt");
  RT_CHECK(n <= size - 8, "safetensors: ", path, ": the header length ", n,
           " does not fit the file of ", size, " bytes: not a safetensors file, or truncated");
  RT_CHECK(n > 0 && start[8] == '{', "safetensors: ", path,
           ": the header does not start with '{': not a safetensors file, or corrupt");
}

// An open safetensors file: its header's bytes (the 8-byte length and the JSON), read only once
// its first bytes pass check_start (so a large file of another kind is refused without reading
// it), and the stream positioned at the data.
struct OpenedFile {
  std::ifstream in;
  std::vector<char> header;
  uint64_t data_size = 0;
};

OpenedFile open_header(const std::string& path) {
  const auto size = static_cast<uint64_t>(check_input_file(path, "safetensors:", "a file"));
  OpenedFile f{std::ifstream(path, std::ios::binary), {}, 0};
  RT_CHECK(f.in, "safetensors: cannot open ", path, ": ", std::strerror(errno));
  f.header.resize(std::min<uint64_t>(size, 9));
  RT_CHECK(f.in.read(f.header.data(), static_cast<std::streamsize>(f.header.size())),
           "safetensors: ", "reading ", path, " failed at its first bytes");
  check_start(path, f.header, size);
  const uint64_t n = get_u64(f.header.data());
  f.header.resize(8 + n);
  RT_CHECK(f.in.read(f.header.data() + 9, static_cast<std::streamsize>(n - 1)),
           "safetensors: ", "reading ", path, " failed after ", 9 + f.in.gcount(), " of its ",
           8 + n, " header bytes");
  f.data_size = size - 8 - n;
  return f;
}

SafeDType parse_dtype(const std::string& path, const std::string& name, const json& entry) {
  const std::string dtype = entry.at("dtype").get<std::string>();
  if (dtype == "F32") return SafeDType::f32;
  if (dtype == "I64") return SafeDType::i64;
  throw Error(str_cat("safetensors: ", path, ": tensor ", name, " has dtype ", dtype,
                      "; ringtrain reads F32 and I64 only (convert it with tensor.float() in ",
                      "torch before saving)"));
}

// The bytes [begin, end) of the data (after the header) a tensor's data_offsets name.
struct ByteRange {
  std::string tensor;
  uint64_t begin = 0, end = 0;
};

// numel x the dtype's bytes, or an Error when that overflows 64 bits.
uint64_t tensor_bytes(const std::string& where, const SafeTensor& t) {
  uint64_t bytes = dtype_bytes(t.dtype);
  for (const int64_t d : t.shape)
    RT_CHECK(!__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes), where, ": shape ",
             shape_str(t.shape), " holds more bytes than 64 bits count");
  return bytes;
}

// One tensor of the header, without its bytes; where they are in the data (`size` bytes after
// the header) in `range`.
SafeTensor parse_tensor(const std::string& path, const std::string& name, const json& entry,
                        uint64_t size, ByteRange& range) {
  const std::string where = str_cat("safetensors: ", path, ": tensor ", name);
  RT_CHECK(entry.is_object(), where, ": its header entry is not a JSON object");
  SafeTensor t;
  t.name = name;
  t.dtype = parse_dtype(path, name, entry);
  for (const json& d : entry.at("shape")) {
    RT_CHECK(d.is_number_unsigned() && d.get<uint64_t>() < (uint64_t{1} << 40), where, ": shape ",
             entry.at("shape").dump(), " is not a list of sizes");
    t.shape.push_back(d.get<int64_t>());
  }
  const json& offsets = entry.at("data_offsets");
  RT_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
               offsets[1].is_number_unsigned(),
           where, ": data_offsets ", offsets.dump(), " is not [begin, end]");
  range = {name, offsets[0].get<uint64_t>(), offsets[1].get<uint64_t>()};
  RT_CHECK(range.begin <= range.end && range.end <= size, where, ": data_offsets [", range.begin,
           ", ", range.end, "] point past the end of the data (", size,
           " bytes): the file is truncated or corrupt");
  const uint64_t expected = tensor_bytes(where, t);
  RT_CHECK(range.end - range.begin == expected, where, ": data_offsets [", range.begin, ", ",
           range.end, "] hold ", range.end - range.begin, " bytes, its shape ", shape_str(t.shape),
           " of ", dtype_name(t.dtype), " needs ", expected);
  return t;
}

// The format's layout rule, as its reference reader checks it: in the order of their offsets,
// the tensors lie back to back from the first byte of the data to its last, with no gap, no
// overlap and no byte left over. A header length off by a byte or offsets written wrong would
// otherwise load every tensor from the wrong bytes without an error.
void check_layout(const std::string& path, std::vector<ByteRange> ranges, uint64_t data_size) {
  std::stable_sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  const std::string rule =
      ": safetensors tensors lie back to back in the data, in the order of their offsets, and "
      "cover it whole; the file is corrupt, or its writer broke the format";
  uint64_t at = 0;
  std::string after = "the start of the data";
  for (const ByteRange& r : ranges) {
    const std::string where = str_cat("safetensors: ", path, ": tensor ", r.tensor,
                                      ": data_offsets [", r.begin, ", ", r.end, "] ");
    RT_CHECK(r.begin >= at, where, "overlap the bytes of ", after, ", which end at byte ", at,
             rule);
    RT_CHECK(r.begin == at, where, "leave bytes [", at, ", ", r.begin, ") after ", after, " unused",
             rule);
    at = r.end;
    after = "tensor " + r.tensor;
  }
  RT_CHECK(at == data_size, "safetensors: ", path, ": the tensors end at byte ", at, " of the ",
           data_size, "-byte data: ", data_size - at,
           " bytes after them belong to no tensor (a wrong header length, or bytes appended)",
           rule);
}

// The header's JSON, refusing a key given twice in one object (a JSON parser keeps one of the
// two silently).
json parse_json(const std::string& path, const char* begin, const char* end) {
  std::vector<std::set<std::string>> keys;  // of each object open at this point of the text
  std::string duplicate;
  const json::parser_callback_t note_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end) keys.pop_back();
    if (event == json::parse_event_t::key &&
        !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  json header;
  try {
    header = json::parse(begin, end, note_keys);
  } catch (const json::exception& e) {
    throw Error(str_cat("safetensors: ", path, ": the header is not JSON (", e.what(),
                        "): not a safetensors file, or corrupt"));
  }
  RT_CHECK(duplicate.empty(), "safetensors: ", path, ": the header names '", duplicate,
           "' twice: each tensor (and each key of an entry) must be named once");
  return header;
}

// The header of the file `bytes` (whose start passed check_start), checked as JSON; the data
// size in `data_size`.
}  // namespace

const char* dtype_name(SafeDType t) {
  return t == SafeDType::f32 ? "F32" : "I64";
}

const SafeTensor* SafeTensors::find(const std::string& name) const {
  for (const SafeTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

SafeTensor f32_tensor(const std::string& name, const Shape& shape, const float* values) {
  const char* p = reinterpret_cast<const char*>(values);
  return {name, SafeDType::f32, shape, std::vector<char>(p, p + shape_numel(shape) * 4)};
}

SafeTensor i64_scalar(const std::string& name, int64_t value) {
  std::vector<char> bytes;
  put_u64(bytes, static_cast<uint64_t>(value));
  return {name, SafeDType::i64, {}, bytes};
}

void write_safetensors(const std::string& path, const SafeTensors& file) {
  const std::string header = header_text(file);
  std::vector<char> image;
  put_u64(image, header.size());
  image.insert(image.end(), header.begin(), header.end());
  for (const SafeTensor& t : file.tensors)
    image.insert(image.end(), t.bytes.begin(), t.bytes.end());
  write_file_atomically(path, image);
}

SafeTensors read_safetensors(const std::string& path) {
  OpenedFile f = open_header(path);
  // Note: a header that starts with '{' and parses is a JSON object.
  const json header = parse_json(path, f.header.data() + 8, f.header.data() + f.header.size());
  SafeTensors file;
  std::vector<ByteRange> ranges;
  try {
    for (const auto& [name, entry] : header.items()) {
      if (name != "__metadata__") {
        ranges.emplace_back();
        file.tensors.push_back(parse_tensor(path, name, entry, f.data_size, ranges.back()));
        continue;
      }
      for (const auto& [key, value] : entry.items()) {
        RT_CHECK(value.is_string(), "safetensors: ", path, ": __metadata__ ", key,
                 " is not a text");
        file.metadata[key] = value.get<std::string>();
      }
    }
  } catch (const json::exception& e) {
    throw Error(str_cat("safetensors: ", path, ": a header entry lacks dtype, shape or ",
                        "data_offsets, or has the wrong kind of value (", e.what(), ")"));
  }
  check_layout(path, ranges, f.data_size);  // before the data is read: it covers them exactly
  for (size_t i = 0; i < ranges.size(); ++i) {
    std::vector<char>& bytes = file.tensors[i].bytes;
    bytes.resize(ranges[i].end - ranges[i].begin);
    f.in.seekg(static_cast<std::streamoff>(f.header.size() + ranges[i].begin));
    RT_CHECK(f.in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())),
             "safetensors: reading ", path, " failed in tensor ", file.tensors[i].name);
  }
  return file;
}

bool is_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const std::streamoff size = in.tellg();
  char start[9];
  in.seekg(0);
  if (size < 10 || !in.read(start, 9)) return false;
  const uint64_t n = get_u64(start);
  return n >= 2 && n <= static_cast<uint64_t>(size) - 8 && start[8] == '{';
}

}  // namespace ringtrain
