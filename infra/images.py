"""Images, independent of the cloud: the container the payload runs in, per GPU generation.

By default nothing is built or published: the stack uploads the payload's source
(infra/bundle.py) and the host runs it in the official TensorFlow GPU image
(Docker Hub `tensorflow/tensorflow:<version>-gpu`, https://www.tensorflow.org/install/docker),
installing the `payload` extra from the bundle when the container starts. The
version per generation follows the compute capabilities each TensorFlow build
ships kernels for (tf.sysconfig.get_build_info()["cuda_compute_capabilities"];
https://github.com/tensorflow/tensorflow/releases):

- `cuda13` (cc >= 7.5: T4, A10G, L4, L40S, A100, H100, H200; B200 is refused by infra/compat.py:
  Blackwell needs CUDA 12.8+, which only a workload's own image brings): 2.21.0 (CUDA 12.5, sm_60..sm_89 + compute_90;
  Keras 3, Python 3.11+), the TensorFlow the payload is tested with. The image ships cuDNN 8.9
  while TensorFlow 2.18+ loads cuDNN 9, so the TensorFlow backend installs
  `tensorflow[and-cuda]` with the payload (infra/compat.py has the sources);
- `cuda12` (cc 5.0..7.0: M60, P100, V100): 2.16.1, the last build with Maxwell (sm_50)
  kernels, which 2.17 removed; Keras 3; there is no 2.16.0;
- `cuda11-legacy` (cc < 5.0: K80): 2.11.0 (CUDA 11.2, sm_35 kernels) on driver 470, the
  last branch for Kepler; Python 3.8 and Keras 2. The project cannot be built there (its
  pyproject.toml needs setuptools>=77, which needs Python 3.9), so install-payload.sh installs
  the `payload-legacy` extra's requirements and puts the bundle on sys.path, as
  payload/Dockerfile.legacy does.

`gpubench:payloadImage` replaces all this with a prebuilt image (payload/Dockerfile)
whose entrypoint is `python -m payload run`; `{generation}` in it is replaced.
Each cloud's host images (AMIs, DLVM families) per generation are data in its
own folder (infra/<cloud>/images.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.compat import FRAMEWORKS, HOSTS
from infra.compat import problems as compat_problems
from payload.workloads import load_spec


@dataclass(frozen=True)
class PublicImage:
    """An official framework image and how the bundle installs into it."""

    image: str
    extra: str = "payload"  # pyproject extra installed from the bundle
    framework: bool = True  # a TensorFlow image (Keras backends apply); False: a workload's own image
    install: str = "package"  # install-payload.sh: build the bundle ("package") or its "requirements" only

    def packages_for(self, backend: str) -> str:
        """What the boot installs beside the payload for `backend`: the backend's CUDA build, or
        what the image lacks for TensorFlow itself (infra.compat.FRAMEWORKS: boot_packages)."""
        if not self.framework:
            return ""  # a workload's own image brings its framework
        if backend == "tensorflow":
            row = FRAMEWORKS.get(self.image)
            return row.boot_packages if row else ""
        return BACKEND_PACKAGES[backend]


TENSORFLOW_IMAGES: dict[str, PublicImage] = {
    "cuda13": PublicImage("tensorflow/tensorflow:2.21.0-gpu"),
    "cuda12": PublicImage("tensorflow/tensorflow:2.16.1-gpu"),
    "cuda11-legacy": PublicImage(
        "tensorflow/tensorflow:2.11.0-gpu",
        extra="payload-legacy",
        install="requirements",
    ),
}


# --backend jax|torch in a TensorFlow image: their CUDA builds, installed with the bundle
# (jax's CUDA 12 wheels: https://docs.jax.dev/en/latest/installation.html; PyPI's Linux torch
# wheel is a CUDA build). The legacy image (Python 3.8, Keras 2) runs tensorflow only.
BACKEND_PACKAGES = {"tensorflow": "", "jax": "jax[cuda12]", "torch": "torch"}


def lookup(table: dict, provider: str, generation: str):
    try:
        return table[generation]
    except KeyError:
        raise KeyError(f"no {provider} image for GPU generation {generation!r}; known: {', '.join(table)}") from None


def public_image(generation: str) -> PublicImage:
    """The official TensorFlow GPU image for this generation (the bundle is installed into it)."""
    return lookup(TENSORFLOW_IMAGES, "tensorflow/tensorflow", generation)


def workload_image(spec_path: str) -> PublicImage | None:
    """A workload's own `image` (PyTorch, NGC, ...), the payload pip-installed into it at start
    (so it needs python3 >= 3.11 and pip); None when the spec names none: the TensorFlow image."""
    image = load_spec(spec_path).image
    return PublicImage(image, framework=False) if image else None


def payload_image(template: str, generation: str) -> str:
    """A prebuilt payload image (gpubench:payloadImage): `{generation}` in it is replaced."""
    return template.replace("{generation}", generation)


def official_image_problems(offering) -> list[str]:
    """Why the official TensorFlow image cannot give this cloud offering's GPU a framework
    (infra.compat's tables; [] when it can, for CPU offerings and for hosts they do not cover)."""
    generation = offering.image_generation
    if offering.gpu is None or (offering.provider, generation) not in HOSTS:
        return []
    return compat_problems(
        offering.provider, generation, offering.gpu.compute_capability, public_image(generation).image
    )
