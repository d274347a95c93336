"""The notebook app's package, packed into a bundle by `lineup app build`."""

from ._app import NotebookApp

__all__ = ["NotebookApp"]
