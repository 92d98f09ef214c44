// Small string helpers shared by the parsers: trimming, splitting, and the
// "did you mean" suggestion used in every unknown-name message.
#ifndef SCALEMODEL_BASE_STRINGS_H_
#define SCALEMODEL_BASE_STRINGS_H_

#include <string>
#include <string_view>
#include <vector>

namespace scalemodel {

std::string_view Trim(std::string_view s);
std::string ToLower(std::string_view s);

// Splits on `sep`; keeps empty pieces so callers can reject "a,,b".
std::vector<std::string> Split(std::string_view s, char sep);

// Levenshtein distance, case-insensitive.
int EditDistance(std::string_view a, std::string_view b);

// Returns the candidate closest to `name` when it is close enough to be a
// plausible typo (distance <= max(2, |name|/3)) or when one is a prefix of
// the other; otherwise an empty string.
std::string Suggest(std::string_view name,
                    const std::vector<std::string>& candidates);

// Returns " (did you mean 'x'?)" or "" when there is no suggestion.
std::string DidYouMean(std::string_view name,
                       const std::vector<std::string>& candidates);

// Formats a number the way messages print it: up to 4 significant digits,
// no trailing zeros ("97.3", "8.2e+11" -> "8.2e11").
std::string FormatNumber(double value);

// At most `max_chars` bytes of `s` for a message, with "..." appended when
// cut, so that no message echoes a whole (possibly huge) input.
std::string Excerpt(std::string_view s, size_t max_chars = 60);

}  // namespace scalemodel

#endif  // SCALEMODEL_BASE_STRINGS_H_
