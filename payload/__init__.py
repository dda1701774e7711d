"""gpubench payload: the benchmark container's Python side. Cheap to import on purpose (analysis imports
``payload.storage`` and ``payload.schema``): TensorFlow loads only inside the training code paths."""

__version__ = "0.1.0"
