#!/usr/bin/env python3
"""Writes the reference trajectories the optimizer fidelity tests compare against
(tests/unit/test_optimizer_references.cpp): tests/data/optimizer_references/<optimizer>.json.

Each file holds cases: a few small parameters of the kinds ResNet has (a conv weight, batch-norm
weight and bias, a linear weight and bias) with their initial values, then for each step the
learning rate, the gradients and the parameters after the update, all float32. The gradients
and initial values come from torch's seeded generator; the updates from

  sgd    torch.optim.SGD
  adamw  torch.optim.AdamW
  lars   the few lines of lars_step() below: TensorFlow's LARSOptimizer (tf.contrib.opt, the
         optimizer of MLPerf's ResNet-50 reference) written independently of ringtrain, in
         float32 torch tensor ops

with batch-norm and bias parameters in a group without weight decay when a case says
decay_norm_and_bias false (LARS always skips them: no trust ratio, no decay).

Run it where torch is installed (CI has none, so the files are committed):
  python3 tools/optimizer_references.py [--out tests/data/optimizer_references]
"""
import argparse
import json
import os

import torch

PARAMETERS = [  # name, kind (as ringtrain's ParamKind), shape
    ("conv.weight", "conv_weight", [3, 2, 2, 2]),
    ("bn.weight", "norm_weight", [3]),
    ("bn.bias", "norm_bias", [3]),
    ("fc.weight", "linear_weight", [2, 3]),
    ("fc.bias", "linear_bias", [2]),
]
EXEMPT = {"norm_weight", "norm_bias", "linear_bias"}
LRS = [0.05, 0.1, 0.1, 0.08, 0.05, 0.02]


def make_case(seed, zero_grad_of=None, zero_weight_of=None):
    """Initial values and per-step gradients; a parameter named by zero_grad_of gets zero
    gradients, one named by zero_weight_of starts at zero (LARS's trust ratio is then 1)."""
    g = torch.Generator().manual_seed(seed)
    init = {}
    for name, _, shape in PARAMETERS:
        init[name] = torch.randn(shape, generator=g, dtype=torch.float32)
        if name == zero_weight_of:
            init[name].zero_()
    grads = []
    for step in range(len(LRS)):
        scale = 0.5 + step * 0.25
        grads.append({name: (scale * torch.randn(shape, generator=g, dtype=torch.float32)
                             if name != zero_grad_of else torch.zeros(shape))
                      for name, _, shape in PARAMETERS})
    return init, grads


def groups(tensors, weight_decay, decay_norm_and_bias):
    decayed = [tensors[n] for n, kind, _ in PARAMETERS if decay_norm_and_bias or kind not in EXEMPT]
    exempt = [tensors[n] for n, kind, _ in PARAMETERS if not decay_norm_and_bias and kind in EXEMPT]
    out = [{"params": decayed, "weight_decay": weight_decay}]
    if exempt:
        out.append({"params": exempt, "weight_decay": 0.0})
    return out


def run_torch(make_optimizer, config, init, grads):
    tensors = {n: init[n].clone().requires_grad_(True) for n, _, _ in PARAMETERS}
    opt = make_optimizer(groups(tensors, config["weight_decay"], config["decay_norm_and_bias"]))
    after = []
    for lr, step_grads in zip(LRS, grads):
        for group in opt.param_groups:
            group["lr"] = lr
        for n in tensors:
            tensors[n].grad = step_grads[n].clone()
        opt.step()
        after.append({n: tensors[n].detach().clone() for n in tensors})
    return after


def lars_step(w, g, m, lr, c, adapted):
    """One LARS update of one parameter (in place), TensorFlow's formulation."""
    if adapted:
        w_norm, g_norm = torch.linalg.vector_norm(w), torch.linalg.vector_norm(g)
        trust = torch.tensor(1.0)
        if w_norm > 0 and g_norm > 0:
            trust = c["lars_eta"] * w_norm / (g_norm + c["weight_decay"] * w_norm + c["lars_epsilon"])
        scaled_lr = lr * trust
        g = g + c["weight_decay"] * w
    else:
        scaled_lr = torch.tensor(lr)
    m.mul_(c["momentum"]).add_(g)
    w.sub_(scaled_lr * m)


def run_lars(config, init, grads):
    tensors = {n: init[n].clone() for n, _, _ in PARAMETERS}
    momentum = {n: torch.zeros_like(t) for n, t in tensors.items()}
    after = []
    for lr, step_grads in zip(LRS, grads):
        for n, kind, _ in PARAMETERS:
            lars_step(tensors[n], step_grads[n], momentum[n], lr, config, kind not in EXEMPT)
        after.append({n: t.clone() for n, t in tensors.items()})
    return after


def runner(optimizer, config):
    if optimizer == "sgd":
        return lambda init, grads: run_torch(
            lambda gs: torch.optim.SGD(gs, lr=0.1, momentum=config["momentum"],
                                       nesterov=config["nesterov"]), config, init, grads)
    if optimizer == "adamw":
        return lambda init, grads: run_torch(
            lambda gs: torch.optim.AdamW(gs, lr=1e-3, betas=(config["beta1"], config["beta2"]),
                                         eps=config["adam_eps"]), config, init, grads)
    return lambda init, grads: run_lars(config, init, grads)


CASES = {
    "sgd": [
        ("momentum, decay on every parameter", {"momentum": 0.9, "weight_decay": 0.01,
          "nesterov": False, "decay_norm_and_bias": True}, {}),
        ("nesterov, no decay on batch norm and bias", {"momentum": 0.8, "weight_decay": 0.05,
          "nesterov": True, "decay_norm_and_bias": False}, {}),
    ],
    "lars": [
        ("MLPerf's settings but a larger trust coefficient", {"momentum": 0.9,
          "weight_decay": 1e-4, "lars_eta": 0.02, "lars_epsilon": 0.0}, {}),
        ("no momentum, epsilon, strong decay", {"momentum": 0.0, "weight_decay": 0.05,
          "lars_eta": 0.1, "lars_epsilon": 1e-3}, {}),
        ("a zero gradient and a zero weight: trust ratio 1", {"momentum": 0.9,
          "weight_decay": 1e-3, "lars_eta": 0.05, "lars_epsilon": 0.0},
         {"zero_grad_of": "conv.weight", "zero_weight_of": "fc.weight"}),
    ],
    "adamw": [
        ("torch's defaults, decay on every parameter", {"beta1": 0.9, "beta2": 0.999,
          "adam_eps": 1e-8, "weight_decay": 0.01, "decay_norm_and_bias": True}, {}),
        ("other betas and eps, no decay on batch norm and bias", {"beta1": 0.8, "beta2": 0.95,
          "adam_eps": 1e-6, "weight_decay": 0.1, "decay_norm_and_bias": False}, {}),
    ],
}


def values(t):
    return [float(v) for v in t.flatten().tolist()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.normpath(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "optimizer_references")))
    parser.add_argument("--only", help="write this optimizer's file alone")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for optimizer, cases in CASES.items():
        if args.only and optimizer != args.only:
            continue
        out = {"optimizer": optimizer, "made_by": f"tools/optimizer_references.py, torch {torch.__version__}",
               "cases": []}
        for seed, (name, config, special) in enumerate(cases):
            init, grads = make_case(seed + 1, **special)
            after = runner(optimizer, config)(init, grads)
            out["cases"].append({
                "name": name, "config": config,
                "parameters": [{"name": n, "kind": k, "shape": s, "init": values(init[n])}
                               for n, k, s in PARAMETERS],
                "steps": [{"lr": lr, "grads": {n: values(g[n]) for n in g},
                           "after": {n: values(a[n]) for n in a}}
                          for lr, g, a in zip(LRS, grads, after)],
            })
        path = os.path.join(args.out, optimizer + ".json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        print(f"wrote {path}: {len(cases)} cases of {len(LRS)} steps")


if __name__ == "__main__":
    main()
