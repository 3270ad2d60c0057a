"""Type aliases shared by the stubs and the drivers."""

from datetime import timedelta
from typing import Literal, Union

#: A duration: int milliseconds (``FOREVER`` and ``ANY`` included) or a non-negative timedelta.
Duration = Union[int, timedelta]

#: A wire encoding.
Encoding = Literal["json", "binary"]
