"""lwtool: an LWIR-first toolchain for declarative AI workflows."""

__version__ = "0.1.0"

__all__ = ["__version__"]
