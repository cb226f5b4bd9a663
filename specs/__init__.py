"""The guarantees memgov keeps, each stated once (see :mod:`specs.catalog`)."""

from .catalog import CATALOG, Guarantee

__all__ = ["CATALOG", "Guarantee"]
