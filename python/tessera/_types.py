"""Small value types of the tessera package."""

from typing import NamedTuple, Tuple, Union

import numpy as np


class TensorInfo(NamedTuple):
    """An input or output of a method: its name, NumPy dtype and shape. A symbolic dim is its
    name ("batch") or an expression of names ("2*batch"); a fixed dim is an int."""

    name: str
    dtype: np.dtype
    shape: Tuple[Union[int, str], ...]
