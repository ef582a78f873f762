// Python values and dicts to backend options. A value's type comes from the backend's schema
// where it knows the key (an int for a double option, a str for an enum choice); anything else
// keeps its Python type so the runtime's validation reports the mismatch with its own message.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <string>
#include <string_view>

#include "tessera/backend/option_value.h"

namespace tessera::python {

/// The option `key` = `value` for `backend` (a backend name, or a delegate id whose backend part
/// names the schema). Throws OptionError (OptionTypeMismatch) for a value that is not a bool,
/// int, float or str, OptionTooLong for over-long keys or strings.
BackendOption to_option(std::string_view backend, std::string_view key, pybind11::handle value);

/// `value` as a str argument; ArgumentError (InvalidArgument) naming `what` if it is not a str.
std::string str_arg(pybind11::handle value, const char* what);
/// `value` as a bool argument; ArgumentError naming `what` if it is not a bool.
bool bool_arg(pybind11::handle value, const char* what);

/// The Python value of an option: bool, int, float or str (enum choices as their name).
pybind11::object option_value(const BackendOption& option);

/// Walks an options mapping in either form, {"xnnpack.num_threads": 2} or
/// {"xnnpack": {"num_threads": 2}} (mixed is fine), calling `add(target, option)` for each entry
/// in order. `what` names the argument in errors ("options"). None is empty. Throws OptionError
/// (OptionParseError) for a key of neither form or a non-mapping argument.
void for_each_option(
    pybind11::handle mapping, const char* what,
    const std::function<void(const std::string& target, const BackendOption&)>& add);

}  // namespace tessera::python
