"""Which Deep Learning VM image family boots a GPU of each generation on GCP (as infra/aws/images.py:
cuda13 cc >= 7.5, cuda12 cc 5.0..7.0, cuda11-legacy the K80's driver 470 era). Ubuntu only: it runs
cloud-init, which reads our user-data (GCP's Debian DLVM images do not)."""

from __future__ import annotations

from dataclasses import dataclass

from infra.images import lookup

IMAGE_PROJECT = "deeplearning-platform-release"


@dataclass(frozen=True)
class GcpImage:
    family: str
    legacy: bool = False


IMAGES: dict[str, GcpImage] = {
    "cuda13": GcpImage("common-cu129-ubuntu-2204-nvidia-580"),
    "cuda12": GcpImage("common-cu128-ubuntu-2204-nvidia-570"),
    "cuda11-legacy": GcpImage("common-cu113-ubuntu-2004", legacy=True),
}


def image_for(generation: str) -> GcpImage:
    return lookup(IMAGES, "gcp", generation)
