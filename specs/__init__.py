"""The guarantees memsteward keeps, each stated once (see :mod:`memsteward.specs.catalog`)."""

from .catalog import CATALOG, Guarantee

__all__ = ["CATALOG", "Guarantee"]
