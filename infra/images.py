"""The container the payload runs in, and whether the GPU can run it, as cited data (the check a mock cannot
make). By default, per GPU generation, the official TensorFlow GPU image (https://www.tensorflow.org/install/docker)
with the uploaded bundle (infra/bundle.py) installed at start; `gpubench:payloadImage` is a prebuilt one
(payload/Dockerfile, `{generation}` replaced). Host images are each cloud's (infra/<cloud>/images.py).
FRAMEWORKS: the CUDA and cuDNN an image's framework loads, what it ships, what the boot adds; GPU_DRIVERS:
per compute capability, the driver branches and open kernel modules that support it; HOSTS: per cloud and
image generation, the host image's driver and whether it ships Docker and the container toolkit (None: no
source says, and prepare-host.sh installs what is missing). `problems()` checks one stack against them; a
workload's own image is checked as far as its CUDA is known (`image_cuda`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from payload.workloads.spec import load_spec

CUDA_COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/ (Minor Version Compatibility, Table 2)"
# The driver branch each CUDA major needs under minor-version compatibility (CUDA_COMPAT: 13.x >= 580,
# 12.x >= 525.60.13, 11.x >= 450.80.02).
MIN_DRIVER_FOR_CUDA = {11: 450, 12: 525, 13: 580}
TF_TESTED = "https://www.tensorflow.org/install/source#gpu (tested build configurations)"
TF_IMAGE_PACKAGES = (
    "https://github.com/tensorflow/build/blob/master/tensorflow_runtime_dockerfiles/gpu.packages.txt "
    "(CUDA 12.3 and libcudnn8 8.9 from apt; `dpkg -l` in the 2.19 image shows libcudnn8 8.9.6.50, tensorflow/build#221)"
)


@dataclass(frozen=True)
class Framework:
    """A framework image: what its framework loads, what the image ships, what the boot adds."""

    tensorflow: str
    python: str
    loads: tuple[str, str]  # (CUDA, cuDNN) the framework dlopens
    ships: tuple[str, str]  # (CUDA, cuDNN) installed in the image
    source: str
    boot_packages: str = ""  # pip requirement the boot installs when `ships` lacks what `loads` needs
    boot_gives: tuple[str, str] | None = None  # (CUDA, cuDNN) after boot_packages


FRAMEWORKS: dict[str, Framework] = {
    # TensorFlow 2.18 and later load cuDNN 9 (TF_TESTED: 2.18.0 is cuDNN 9.3, CUDA 12.5), but the
    # image still installs cuDNN 8.9: no GPU is registered ("Cannot dlopen some GPU libraries",
    # tensorflow/build#217, tensorflow/tensorflow#94593). `pip install tensorflow[and-cuda]` adds the
    # CUDA 12.5 / cuDNN 9.3 wheels TensorFlow loads (the `and-cuda` extra of
    # tensorflow/tools/pip_package/setup.py pins nvidia-cudnn-cu12 == 9.3.0.75 and CUDA 12.5.82
    # libraries) and makes the GPU appear in the image (tensorflow/tensorflow#62412).
    "tensorflow/tensorflow:2.21.0-gpu": Framework(
        tensorflow="2.21.0",
        python="3.11",
        loads=("12.5", "9.3"),
        ships=("12.3", "8.9"),
        source=f"{TF_TESTED}; {TF_IMAGE_PACKAGES}; tensorflow/tensorflow#62412, #94593; tensorflow/build#217",
        boot_packages="tensorflow[and-cuda]==2.21.0",
        boot_gives=("12.5", "9.3"),
    ),
    # payload/Dockerfile's base: the last TensorFlow built against cuDNN 8.9.
    "tensorflow/tensorflow:2.17.0-gpu": Framework(
        "2.17.0", "3.11", ("12.3", "8.9"), ("12.3", "8.9"), f"{TF_TESTED}; {TF_IMAGE_PACKAGES}"
    ),
    "tensorflow/tensorflow:2.16.1-gpu": Framework(
        "2.16.1", "3.11", ("12.3", "8.9"), ("12.3", "8.9"), f"{TF_TESTED}; {TF_IMAGE_PACKAGES}"
    ),
    # Python 3.8: the payload is installed from its requirements, not built (install-payload.sh).
    "tensorflow/tensorflow:2.11.0-gpu": Framework(
        "2.11.0", "3.8", ("11.2", "8.1"), ("11.2", "8.1"), f"{TF_TESTED} (tensorflow-2.11.0: CUDA 11.2, cuDNN 8.1)"
    ),
}

NVIDIA_SUPPORT = (
    "NVIDIA: R470 is the last driver branch supporting Kepler (https://nvidia.custhelp.com/app/answers/detail/a_id/5202); "
    "R580 the last supporting Maxwell, Pascal and Volta (CUDA 12.9 release notes, deprecated architectures); "
    "the open kernel modules support Turing and later only "
    "(https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/, Open GPU kernel modules)"
)


BLACKWELL_GUIDE = "https://docs.nvidia.com/cuda/blackwell-compatibility-guide/"
BLACKWELL = (
    f"NVIDIA Blackwell Compatibility Guide ({BLACKWELL_GUIDE}, 1.4): "
    "CUDA 12.8 is the first toolkit that builds native code for compute capability 10.0; older builds run only "
    "through PTX JIT, which this project has not verified; driver R570 is the first branch with Blackwell "
    "(CUDA 12.8 release notes, toolkit driver table)"
)


@dataclass(frozen=True)
class GpuDriver:
    """What a GPU of compute capability >= `min_cc` (up to the next row) needs from the driver
    and from the CUDA build of the framework."""

    min_cc: float
    architectures: str
    max_branch: int | None  # the newest driver branch supporting it (None: current)
    open_modules: bool
    source: str = NVIDIA_SUPPORT
    min_cuda: str | None = None  # the first CUDA with native code for it (None: any the table allows)
    min_branch: int | None = None  # the first driver branch supporting it
    min_cuda_source: str = ""  # where min_cuda is stated (short, for error messages)


GPU_DRIVERS: tuple[GpuDriver, ...] = (  # newest first
    GpuDriver(10.0, "Blackwell", None, True, BLACKWELL, "12.8", 570, BLACKWELL_GUIDE),
    GpuDriver(7.5, "Turing, Ampere, Ada, Hopper", None, True),
    GpuDriver(5.0, "Maxwell, Pascal, Volta", 580, False),
    GpuDriver(0.0, "Kepler", 470, False),
)


def gpu_driver(compute_capability: str) -> GpuDriver:
    cc = float(compute_capability)
    return next(row for row in GPU_DRIVERS if cc >= row.min_cc)


@dataclass(frozen=True)
class Host:
    """A host image: its NVIDIA driver and what it ships for running the container."""

    image: str
    driver_branch: int
    open_modules: bool
    docker: bool | None  # None: no source found; the boot installs it when missing
    container_toolkit: bool | None
    source: str


DLAMI_NOTES = "https://docs.aws.amazon.com/dlami/latest/devguide/appendix-ami-release-notes.html"
DLVM_FAMILIES = (
    "https://cloud.google.com/deep-learning-vm/docs/images (image families; the suffix names the driver branch)"
)

HOSTS: dict[tuple[str, str], Host] = {
    # The Base OSS Nvidia Driver AMIs' release notes list nvidia_driver (570 and later; 595.91.07 in
    # the 2026-10 Ubuntu 22.04 builds), nvidia_container_toolkit_version and the docker-ce packages.
    ("aws", "cuda13"): Host(
        "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)", 570, True, True, True, DLAMI_NOTES
    ),
    ("aws", "cuda12"): Host(
        "Deep Learning Base Proprietary Nvidia Driver GPU AMI (Ubuntu 20.04)", 535, False, True, True, DLAMI_NOTES
    ),
    # Deprecated CUDA 11 era builds (driver 470 for the K80): no current release note to cite.
    ("aws", "cuda11-legacy"): Host("Deep Learning Base AMI (Ubuntu 18.04)", 470, False, None, None, DLAMI_NOTES),
    # No Google page found says the Deep Learning VM families ship Docker or the toolkit.
    ("gcp", "cuda13"): Host("common-cu129-ubuntu-2204-nvidia-580", 580, False, None, None, DLVM_FAMILIES),
    ("gcp", "cuda12"): Host("common-cu128-ubuntu-2204-nvidia-570", 570, False, None, None, DLVM_FAMILIES),
    ("gcp", "cuda11-legacy"): Host("common-cu113-ubuntu-2004", 470, False, None, None, DLVM_FAMILIES),
}


def _version(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def problems(cloud: str, generation: str, compute_capability: str | None, image: str) -> list[str]:
    """Why this host, GPU (None: CPU only) and image would not give the framework a GPU ([] when they do)."""
    found: list[str] = []
    host = HOSTS.get((cloud, generation))
    framework = FRAMEWORKS.get(image)
    if host is None:
        return [f"no host image row for {cloud} {generation}"]
    if framework is None:
        return [f"no compatibility row for image {image}"]
    cuda, cudnn = framework.boot_gives or framework.ships
    for lib, loads, gives in (("cuDNN", framework.loads[1], cudnn), ("CUDA", framework.loads[0], cuda)):
        if _version(gives)[0] != _version(loads)[0]:
            found.append(f"{image}: TensorFlow {framework.tensorflow} loads {lib} {loads}, the image gives {gives}")
    return found + _host_and_gpu(host, compute_capability, cuda, image, f"TensorFlow {framework.tensorflow}")


def _host_and_gpu(host: Host, compute_capability: str | None, cuda: str, image: str, who: str) -> list[str]:
    """What the host's driver and the image's CUDA build lack for this GPU."""
    found: list[str] = []
    needed = MIN_DRIVER_FOR_CUDA[_version(cuda)[0]]
    if host.driver_branch < needed:
        found.append(f"{host.image}: driver {host.driver_branch} < {needed}, which CUDA {cuda} needs ({CUDA_COMPAT})")
    if compute_capability is None:
        return found
    gpu = gpu_driver(compute_capability)
    if gpu.max_branch is not None and host.driver_branch > gpu.max_branch:
        found.append(f"{host.image}: driver {host.driver_branch} dropped {gpu.architectures} (last: {gpu.max_branch})")
    if host.open_modules and not gpu.open_modules:
        found.append(f"{host.image}: open kernel modules do not support {gpu.architectures}")
    if gpu.min_branch is not None and host.driver_branch < gpu.min_branch:
        found.append(
            f"{host.image}: driver {host.driver_branch} predates {gpu.architectures} (first: {gpu.min_branch})"
        )
    if gpu.min_cuda is not None and _version(cuda) < _version(gpu.min_cuda):
        found.append(
            f"{image}: {who} runs on CUDA {cuda}, which has no native code for {gpu.architectures} "
            f"(compute capability {compute_capability}; needs CUDA {gpu.min_cuda}+, {gpu.min_cuda_source})"
        )
    return found


# The CUDA build a tag names: pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime (the official PyTorch
# images' tag format, https://hub.docker.com/r/pytorch/pytorch/tags), nvcr.io/...:...-cuda12.8-...
TAG_CUDA = re.compile(r"(?:^|[-_])cuda(\d+\.\d+)")


def image_cuda(image: str) -> str | None:
    """The CUDA a workload's own image runs: its FRAMEWORKS row's, else its tag's; None: unknown."""
    row = FRAMEWORKS.get(image)
    if row is not None:
        return row.ships[0]  # a workload's image gets nothing installed beside the payload
    match = TAG_CUDA.search(image.rpartition(":")[2]) if ":" in image else None
    return match.group(1) if match else None


def workload_image_problems(offering, image: str) -> list[str]:
    """Why a workload's own image cannot run this cloud offering's GPU, as far as its CUDA is known."""
    cuda = image_cuda(image)
    host = HOSTS.get((offering.provider, offering.image_generation))
    if offering.gpu is None or host is None or cuda is None:
        return []
    return _host_and_gpu(host, offering.gpu.compute_capability, cuda, image, "the workload's image")


def image_fix(offering) -> str:
    """What would give this offering's GPU a framework, for a refusal."""
    need = gpu_driver(offering.gpu.compute_capability).min_cuda if offering.gpu else None
    built = f"built with CUDA {need}+" if need else "built for it"
    return (
        f"Give a workload image {built} (the workload spec's `image`; a tag such as "
        "pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime names its CUDA, as in examples/pytorch-resnet) "
        "or a prebuilt gpubench:payloadImage"
    )


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
    # It ships cuDNN 8.9 but loads 9: the boot adds tensorflow[and-cuda] (above). B200 is refused
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
    return problems(offering.provider, generation, offering.gpu.compute_capability, public_image(generation).image)
