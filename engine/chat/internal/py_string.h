// Python `str` semantics over UTF-8 strings: code-point indexing, Unicode whitespace,
// case mapping, repr() and float formatting, as the Jinja2 reference computes them.
//
// Strings are UTF-8; a byte that does not start a valid sequence counts as one code point
// (its value the byte), so invalid input never fails, it is only measured differently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/utf8.h"

namespace orca::chat_internal {

// Decodes UTF-8 to code points.
std::vector<char32_t> DecodeUtf8(std::string_view s);
using ::orca::AppendUtf8;  // engine/common/utf8.h
std::string EncodeUtf8(const std::vector<char32_t>& cps, size_t begin, size_t end);
// Python len(s).
size_t CodePointCount(std::string_view s);

// Python str.isspace() for one code point.
bool IsPySpace(char32_t cp);
// Python str.isalpha()/isdigit()/isalnum() approximations (ASCII exact; letters of
// the Latin, Greek and Cyrillic blocks and most CJK count as alphabetic).
bool IsPyAlpha(char32_t cp);
bool IsPyDigit(char32_t cp);
// Simple case mapping (ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic, fullwidth).
char32_t ToUpperCp(char32_t cp);
char32_t ToLowerCp(char32_t cp);
bool IsUpperCp(char32_t cp);
bool IsLowerCp(char32_t cp);

std::string PyUpper(std::string_view s);
std::string PyLower(std::string_view s);
std::string PyCapitalize(std::string_view s);
std::string PyTitle(std::string_view s);     // str.title()
std::string JinjaTitle(std::string_view s);  // the `title` filter
std::string PySwapcase(std::string_view s);

// str.strip/lstrip/rstrip; `chars` nullopt strips whitespace.
enum class StripSide { kBoth, kLeft, kRight };
std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, StripSide side);
// str.split(sep, maxsplit) and str.rsplit; sep nullopt splits on whitespace runs.
std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep,
                                 int64_t maxsplit, bool from_right);
// str.splitlines(keepends).
std::vector<std::string> PySplitLines(std::string_view s, bool keepends);
// str.replace(old, new, count); count < 0 replaces all.
std::string PyReplace(std::string_view s, std::string_view old_sub, std::string_view new_sub,
                      int64_t count);
// str.find (code-point index of the first match at or after `start`, or -1).
int64_t PyFind(std::string_view s, std::string_view sub, bool from_right);
int64_t PyCount(std::string_view s, std::string_view sub);

// repr() of a str, with Python's quote choice and escapes.
std::string PyReprString(std::string_view s);
// repr() of a float ("1.0", "1e+16", "nan", "inf").
std::string PyFloatRepr(double d);
// Python int(str) in base 10 (whitespace, sign and underscores allowed).
std::optional<int64_t> PyParseInt(std::string_view s, int base);
// Python float(str).
std::optional<double> PyParseFloat(std::string_view s);
// markupsafe.escape.
std::string HtmlEscape(std::string_view s);

}  // namespace orca::chat_internal
