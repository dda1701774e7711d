"""gpubench payload: the benchmark container's Python side.

Importing this package is cheap on purpose: analysis imports
``payload.storage`` and ``payload.schema`` and must not pay for (or need)
TensorFlow. TensorFlow is imported only inside the training code paths.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
