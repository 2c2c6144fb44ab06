"""Lays out a CUDA_HOME from NVIDIA's PyPI wheels installed in this
interpreter's environment (nvidia-cuda-nvcc, -runtime, -crt, nvvm, cccl):
DIR/bin, DIR/include, DIR/lib64 and DIR/nvvm as symbolic links into the
wheels, plus the unversioned libcudart.so that linking asks for. The wheels
of CUDA 13 share one tree (nvidia/cu13), those of CUDA 12 have one each
(nvidia/cuda_nvcc, nvidia/cuda_runtime, ...); both lay out alike.

Usage: python cuda_home.py DIR   (run with the venv's python)"""
import glob
import os
import sys

import nvidia


def trees():
    roots = []
    for base in nvidia.__path__:
        for entry in sorted(os.listdir(base)):
            path = os.path.join(base, entry)
            if os.path.isdir(path) and not entry.startswith("__"):
                roots.append(path)
    return roots


def link_entries(target_dir, sources):
    os.makedirs(target_dir, exist_ok=True)
    for source in sources:
        for entry in sorted(os.listdir(source)):
            link = os.path.join(target_dir, entry)
            if not os.path.lexists(link):
                os.symlink(os.path.join(source, entry), link)


def main(out):
    roots = trees()
    bins = [os.path.join(r, "bin") for r in roots if os.path.isfile(os.path.join(r, "bin", "nvcc"))]
    if not bins:
        sys.exit("no nvcc among the nvidia wheels: install nvidia-cuda-nvcc of the runtime's version")
    link_entries(os.path.join(out, "bin"), bins)
    link_entries(os.path.join(out, "include"),
                 [os.path.join(r, "include") for r in roots if os.path.isdir(os.path.join(r, "include"))])
    lib64 = os.path.join(out, "lib64")
    link_entries(lib64, [os.path.join(r, "lib") for r in roots if os.path.isdir(os.path.join(r, "lib"))])
    nvvm = [os.path.join(r, "nvvm") for r in roots if os.path.isdir(os.path.join(r, "nvvm"))]
    if nvvm and not os.path.lexists(os.path.join(out, "nvvm")):
        os.symlink(nvvm[0], os.path.join(out, "nvvm"))
    # Linking asks for libcudart.so; the wheels ship libcudart.so.MAJOR.
    for versioned in glob.glob(os.path.join(lib64, "libcudart.so.*")):
        plain = os.path.join(lib64, "libcudart.so")
        if not os.path.lexists(plain):
            os.symlink(os.path.realpath(versioned), plain)
    print(out)


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1]))
