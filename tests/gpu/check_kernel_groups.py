#!/usr/bin/env python3
"""tools/kernel_groups.py on two small kernel lists, one in each format it reads (nsys's
cuda_gpu_kern_sum CSV and pytorch_train_gpu.py --kernel-csv's): each kernel in its group, the
times and launches per step, the totals, and a bad run spec refused."""
import os
import subprocess
import sys
import tempfile

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                    "kernel_groups.py")

NSYS = """Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
50.0,8000000,4,2000000,2000000,2000000,2000000,0,sm90_xmma_fprop_implicit_gemm_bf16bf16_f32
25.0,4000000,8,500000,500000,500000,500000,0,"void ringtrain::cuda::then_finish_kernel<ringtrain::kernels::SumAndSquare<bf16>>(int)"
12.5,2000000,2,1000000,1000000,1000000,1000000,0,"void ringtrain::cuda::grid_stride_kernel<ringtrain::kernels::RunIndexed<ringtrain::kernels::SgdStep<float, bf16>>>(long)"
12.5,2000000,2,1000000,1000000,1000000,1000000,0,some_kernel_of_its_own
"""
TORCH = """name,total_ns,calls
cudnn::bn_fw_tr_1C11_kernel_NHWC,3000000,3
"void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",1500000,6
"""


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


def main():
    failures = 0

    def expect(name, ok):
        nonlocal failures
        print(("ok   " if ok else "FAIL ") + name)
        failures += not ok

    with tempfile.TemporaryDirectory() as tmp:
        nsys, torch = os.path.join(tmp, "nsys.csv"), os.path.join(tmp, "torch.csv")
        open(nsys, "w").write(NSYS)
        open(torch, "w").write(TORCH)
        r = run(f"ringtrain={nsys}:2", f"pytorch={torch}:3")
        rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
                for line in r.stdout.splitlines() if line.startswith("| ") and "group" not in line}
        expect("exit 0", r.returncode == 0)
        expect("convolutions: ringtrain 4 ms and 2 launches a step, pytorch none",
               rows.get("convolutions, GEMMs") == ["4.00", "2", "0.00", "0"])
        expect("batch norm: ringtrain's sums, cuDNN's bn kernel (not a convolution)",
               rows.get("batch norm") == ["2.00", "4", "1.00", "1"])
        expect("optimizer: the SGD body", rows.get("optimizer") == ["1.00", "1", "0.00", "0"])
        expect("elementwise: torch's vectorized add",
               rows.get("elementwise") == ["0.00", "0", "0.50", "2"])
        expect("other: the rest", rows.get("other") == ["1.00", "1", "0.00", "0"])
        expect("total", rows.get("total") == ["8.00", "8", "1.50", "3"])
        bad = run(f"ringtrain={nsys}:0")
        expect("a run of 0 steps is refused", bad.returncode != 0 and "LABEL=FILE:STEPS" in
               (bad.stdout + bad.stderr))
    print(f"kernel_groups: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
