"""The package's version, in a leaf module so that every layer can read it without importing the facade."""

__version__ = "0.1.0"
