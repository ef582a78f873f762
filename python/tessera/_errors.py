"""The exceptions the tessera package raises: one class per family of the runtime's status codes
(tessera/core/error.h). Every exception carries the runtime's code name (``code``), its number
(``code_value``) and its message (``str(e)``), which includes the runtime's did-you-mean hints."""


class Error(Exception):
    """Base of every error the runtime reports."""

    def __init__(self, message, code="Internal", code_value=0x01):
        super().__init__(message)
        self.message = message
        self.code = code
        self.code_value = code_value

    def __str__(self):
        return self.message

    def __repr__(self):
        return f"{type(self).__name__}({self.message!r}, code={self.code!r})"


class StateError(Error):
    """Internal, InvalidState, EndOfMethod: a call made in the wrong state (a closed program, an
    init-only option after the backend started)."""


class ArgumentError(Error, ValueError):
    """InvalidArgument: a value the call does not accept."""


class NotSupportedError(Error):
    """NotSupported, NotImplemented, OperatorMissing."""


class DTypeError(Error, TypeError):
    """InvalidType: an array of a dtype the input cannot take."""


class ProgramError(Error):
    """InvalidProgram, Truncated: the bytes are not a valid Tessera program (or, from compile,
    the model is not a valid ONNX model)."""


class ShapeError(Error, ValueError):
    """ShapeMismatch: an input's rank or sizes differ from what the method takes, or a symbolic
    dim outside its compiled bounds."""


class NotFoundError(Error, LookupError):
    """NotFound: no such file, method, input or backend."""


class ResourceError(Error):
    """MemoryAllocationFailed, AccessFailed, AlreadyExists."""


class DelegateError(Error):
    """The delegate codes: a backend could not initialise or run a delegate."""


class OptionError(Error, ValueError):
    """The option codes: unknown backend or key, wrong type, out of range, invalid choice, wrong
    scope, too long, unparsable."""


class DTypeConversionWarning(UserWarning):
    """An input array was converted to the dtype the method takes (a copy)."""


_BY_CODE = {
    0x01: StateError, 0x02: StateError, 0x03: StateError,
    0x10: NotSupportedError, 0x11: NotSupportedError, 0x12: ArgumentError, 0x13: DTypeError,
    0x14: NotSupportedError, 0x15: ProgramError, 0x16: ShapeError,
    0x20: NotFoundError, 0x21: ResourceError, 0x22: ResourceError, 0x23: ProgramError,
    0x24: ResourceError,
}


def error_class(code_value):
    """The exception class for a runtime status code."""
    if 0x30 <= code_value < 0x40:
        return DelegateError
    if 0x40 <= code_value < 0x50:
        return OptionError
    return _BY_CODE.get(code_value, Error)


def from_status(code_value, code, message, family=None):
    """The exception for a runtime status (used by the extension module); ``family`` names the
    class to use instead of the code's."""
    cls = globals()[family] if family else error_class(code_value)
    return cls(message, code, code_value)


__all__ = ["Error", "StateError", "ArgumentError", "NotSupportedError", "DTypeError",
           "ProgramError", "ShapeError", "NotFoundError", "ResourceError", "DelegateError",
           "OptionError", "DTypeConversionWarning"]
