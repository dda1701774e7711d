"""Which machine image boots a GPU of each generation, per cloud (data, not code).

The catalog gives every offering an `image_generation` from the GPU's compute
capability; the host image must carry an NVIDIA driver that still supports that
GPU *and* is new enough for the payload container's CUDA:

- `cuda13` (cc >= 7.5: T4, A10G, L4, A100, H100): driver 580 branch.
  AWS "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)" (open kernel
  modules, Turing and newer only); GCP DLVM `common-cu129-ubuntu-2204-nvidia-580`.
- `cuda12` (cc 5.0..7.0: M60, P100, V100): proprietary driver (the open kernel
  modules do not support Maxwell/Pascal/Volta). AWS "Deep Learning Base Proprietary
  Nvidia Driver GPU AMI (Ubuntu 20.04)"; GCP DLVM `common-cu128-ubuntu-2204-nvidia-570`.
- `cuda11-legacy` (cc < 5.0: K80): the 470 driver branch is the last with Kepler.
  AWS "Deep Learning Base AMI (Ubuntu 18.04) Version *" builds of the CUDA 11 era;
  GCP DLVM `common-cu113-ubuntu-2004`. These images are deprecated upstream, hence
  `include_deprecated`; `gpubench:image` pins an exact image when the lookup drifts.

Only Ubuntu images are used: they run cloud-init, which reads our user-data
(GCP's Debian DLVM images do not).
"""

from __future__ import annotations

from dataclasses import dataclass

AWS_OWNER = "amazon"
GCP_IMAGE_PROJECT = "deeplearning-platform-release"


@dataclass(frozen=True)
class AwsImage:
    name_pattern: str
    include_deprecated: bool
    legacy: bool = False


@dataclass(frozen=True)
class GcpImage:
    family: str
    legacy: bool = False


AWS_IMAGES: dict[str, AwsImage] = {
    "cuda13": AwsImage("Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *", include_deprecated=False),
    "cuda12": AwsImage("Deep Learning Base Proprietary Nvidia Driver GPU AMI (Ubuntu 20.04) *", include_deprecated=True),
    "cuda11-legacy": AwsImage("Deep Learning Base AMI (Ubuntu 18.04) Version *", include_deprecated=True, legacy=True),
}

GCP_IMAGES: dict[str, GcpImage] = {
    "cuda13": GcpImage("common-cu129-ubuntu-2204-nvidia-580"),
    "cuda12": GcpImage("common-cu128-ubuntu-2204-nvidia-570"),
    "cuda11-legacy": GcpImage("common-cu113-ubuntu-2004", legacy=True),
}


def _lookup(table: dict, provider: str, generation: str):
    try:
        return table[generation]
    except KeyError:
        raise KeyError(f"no {provider} image for GPU generation {generation!r}; known: {', '.join(table)}") from None


def aws_image(generation: str) -> AwsImage:
    return _lookup(AWS_IMAGES, "aws", generation)


def gcp_image(generation: str) -> GcpImage:
    return _lookup(GCP_IMAGES, "gcp", generation)


def payload_image(template: str, generation: str) -> str:
    """The payload container for this generation: `{generation}` in the configured image is replaced."""
    return template.replace("{generation}", generation)
