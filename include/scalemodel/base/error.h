// Errors for people: a code, one sentence, and where the problem is.
#ifndef SCALEMODEL_BASE_ERROR_H_
#define SCALEMODEL_BASE_ERROR_H_

#include <string>
#include <utility>

#include "tl/expected.hpp"

namespace scalemodel {

// kCancelled: the caller stopped the work (search::SearchOptions::cancelled).
enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kParse,
  kIo,
  kInternal,
  kCancelled
};

// One user-facing error. `where` is a file:line ("data/chips/h100.toml:12"), a
// JSON path ("/model/num_layers") or the name of the input; it may be empty.
// `message` is one sentence without the location.
//
// Library code names an input as the library API does, in snake_case: the
// parameter or field ("plan", "batch_tokens", "mesh", "axes", "chips"), never
// a front end's spelling of it, and its message names other inputs the same
// way ("give a price per chip-hour", not "pass --price-per-chip-hour"). Each
// front end converts the name where it prints errors: the CLI
// (tools/cli/main.cc) writes "--" + the name with '-' for '_' when the
// command has that flag ("batch_tokens" -> "--batch-tokens"), with a small
// table for the exceptions; the CLI's own option checks use the flag
// directly.
struct Error {
  ErrorCode code = ErrorCode::kInvalidArgument;
  std::string message;
  std::string where;

  // Returns "where: message", or just the message when `where` is empty.
  std::string ToString() const;
};

template <class T>
using Result = tl::expected<T, Error>;

// Shorthands that build an unexpected Error, for `return InvalidArgument(..)`.
inline tl::unexpected<Error> InvalidArgument(std::string message,
                                             std::string where = "") {
  return tl::unexpected<Error>(
      Error{ErrorCode::kInvalidArgument, std::move(message), std::move(where)});
}
inline tl::unexpected<Error> NotFound(std::string message,
                                      std::string where = "") {
  return tl::unexpected<Error>(
      Error{ErrorCode::kNotFound, std::move(message), std::move(where)});
}
inline tl::unexpected<Error> ParseError(std::string message,
                                        std::string where = "") {
  return tl::unexpected<Error>(
      Error{ErrorCode::kParse, std::move(message), std::move(where)});
}
inline tl::unexpected<Error> IoError(std::string message,
                                     std::string where = "") {
  return tl::unexpected<Error>(
      Error{ErrorCode::kIo, std::move(message), std::move(where)});
}

}  // namespace scalemodel

#endif  // SCALEMODEL_BASE_ERROR_H_
