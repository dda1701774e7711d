"""The container the payload runs in, per GPU generation: by default the official TensorFlow GPU image
(https://www.tensorflow.org/install/docker) with the uploaded bundle (infra/bundle.py) installed at start;
`gpubench:payloadImage` is a prebuilt one (payload/Dockerfile, `{generation}` replaced). Host images are
each cloud's (infra/<cloud>/images.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.compat import FRAMEWORKS, HOSTS
from infra.compat import problems as compat_problems
from payload.workloads.spec import load_spec


@dataclass(frozen=True)
class PublicImage:
    """A public image and how the bundle installs into it."""

    image: str
    extra: str = "payload"  # pyproject extra installed from the bundle
    framework: bool = True  # a TensorFlow image (Keras backends apply); False: a workload's own image
    install: str = "package"  # install-payload.sh: build the bundle ("package") or its "requirements" only

    def packages_for(self, backend: str) -> str:
        """What the boot installs beside the payload: the backend's CUDA build, or what the image lacks for
        TensorFlow itself (FRAMEWORKS boot_packages)."""
        if not self.framework:
            return ""  # a workload's own image brings its framework
        if backend == "tensorflow":
            row = FRAMEWORKS.get(self.image)
            return row.boot_packages if row else ""
        return BACKEND_PACKAGES[backend]


# The version per generation follows the compute capabilities each build ships kernels for
# (tf.sysconfig.get_build_info()["cuda_compute_capabilities"]; https://github.com/tensorflow/tensorflow/releases).
TENSORFLOW_IMAGES: dict[str, PublicImage] = {
    # cc >= 7.5 (T4 .. H200): CUDA 12.5, sm_60..sm_89 + compute_90, Keras 3; the payload's tested TensorFlow.
    # It ships cuDNN 8.9 but loads 9: the boot adds tensorflow[and-cuda] (infra/compat.py). B200 is refused
    # there: Blackwell needs CUDA 12.8+, which only a workload's own image brings.
    "cuda13": PublicImage("tensorflow/tensorflow:2.21.0-gpu"),
    # cc 5.0..7.0 (M60, P100, V100): the last build with Maxwell (sm_50) kernels (2.17 removed them); no 2.16.0.
    "cuda12": PublicImage("tensorflow/tensorflow:2.16.1-gpu"),
    # cc < 5.0 (K80): CUDA 11.2, sm_35, driver 470 (Kepler's last); Python 3.8 and Keras 2 cannot build the
    # project (setuptools>=77 needs 3.9), so install-payload.sh installs the extra's requirements and puts the
    # bundle on sys.path, as payload/Dockerfile.legacy does.
    "cuda11-legacy": PublicImage("tensorflow/tensorflow:2.11.0-gpu", extra="payload-legacy", install="requirements"),
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
    """A workload's own `image` (needs python3 >= 3.11 and pip for the payload), or None."""
    image = load_spec(spec_path).image
    return PublicImage(image, framework=False) if image else None


def payload_image(template: str, generation: str) -> str:
    """A prebuilt payload image (gpubench:payloadImage): `{generation}` in it is replaced."""
    return template.replace("{generation}", generation)


def official_image_problems(offering) -> list[str]:
    """Why the official TensorFlow image cannot give this offering's GPU a framework ([] also for CPUs
    and hosts the tables do not cover)."""
    generation = offering.image_generation
    if offering.gpu is None or (offering.provider, generation) not in HOSTS:
        return []
    return compat_problems(
        offering.provider, generation, offering.gpu.compute_capability, public_image(generation).image
    )
