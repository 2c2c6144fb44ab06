"""A problem's work for the roofline (docs/roofline.md), counted in the
reference worker at the verified sizes and precision:

- bytes: what a kernel must at least move: every tensor input read once,
  the model's parameters and buffers read once, every output written once;
- flops: the floating-point operations of the reference's forward, counted
  per dispatcher op. Where torch has a FLOP counter
  (torch.utils.flop_counter, torch >= 2.1) the ops it knows (matmuls,
  convolutions, attention) are its count; every other op gets kgym's
  formula (FORMULAS below), the same on every torch. An op with neither is
  named in `uncounted_ops` with its calls: its FLOPs are missing from the
  count.

Trusted code: it runs in the reference worker only, never beside a
candidate. Standard library and torch; torch 1.13 and 2.x.
"""

import collections

from kgym_worker_common import WorkerError, exception_line, traceback_tail

# ---------------------------------------------------------------- formulas

# Ops that move or make data and compute nothing.
MOVEMENT = {
    "aten.view", "aten._unsafe_view", "aten.reshape", "aten.t", "aten.transpose", "aten.permute",
    "aten.expand", "aten.contiguous", "aten.clone", "aten.copy_", "aten._to_copy", "aten.to",
    "aten.empty", "aten.empty_like", "aten.empty_strided", "aten.zeros", "aten.zeros_like",
    "aten.ones", "aten.ones_like", "aten.full", "aten.full_like", "aten.fill_", "aten.zero_",
    "aten.detach", "aten.alias", "aten.slice", "aten.select", "aten.squeeze", "aten.unsqueeze",
    "aten.cat", "aten.stack", "aten.split", "aten.split_with_sizes", "aten.chunk", "aten.unbind",
    "aten.narrow", "aten.flatten", "aten.unflatten", "aten.index_select", "aten.gather",
    "aten.index", "aten.as_strided", "aten.new_empty", "aten.new_zeros", "aten.new_ones",
    "aten.new_full", "aten.new_empty_strided", "aten.lift_fresh", "aten.arange", "aten.repeat",
    "aten.flip", "aten.roll", "aten.tril", "aten.triu", "aten.constant_pad_nd", "aten.pad",
    "aten.diagonal", "aten.unfold", "aten.im2col", "aten.col2im", "aten.scalar_tensor",
    "aten._reshape_alias", "aten.masked_fill", "aten.masked_fill_", "aten.resize_", "aten.set_",
    "aten.view_as_real", "aten.view_as_complex", "aten.movedim", "aten.swapaxes", "aten.item",
    "aten._local_scalar_dense", "aten.is_nonzero", "aten.sym_size", "aten.sym_stride",
}

# One operation per output element.
POINTWISE = {
    "aten.add", "aten.sub", "aten.mul", "aten.div", "aten.neg", "aten.abs", "aten.relu",
    "aten.relu6", "aten.gelu", "aten.sigmoid", "aten.tanh", "aten.exp", "aten.exp2", "aten.expm1",
    "aten.log", "aten.log2", "aten.log10", "aten.log1p", "aten.sqrt", "aten.rsqrt", "aten.pow",
    "aten.reciprocal", "aten.clamp", "aten.clamp_min", "aten.clamp_max", "aten.clip",
    "aten.hardtanh", "aten.leaky_relu", "aten.elu", "aten.selu", "aten.celu", "aten.softplus",
    "aten.softshrink", "aten.hardshrink", "aten.hardsigmoid", "aten.hardswish", "aten.silu",
    "aten.mish", "aten.erf", "aten.erfc", "aten.sign", "aten.sgn", "aten.where", "aten.maximum",
    "aten.minimum", "aten.threshold", "aten.rrelu_with_noise", "aten.prelu", "aten._prelu_kernel",
    "aten.glu", "aten.sin", "aten.cos", "aten.tan", "aten.atan", "aten.sinh", "aten.cosh",
    "aten.floor", "aten.ceil", "aten.round", "aten.trunc", "aten.frac", "aten.fmod",
    "aten.remainder", "aten.square", "aten.eq", "aten.ne", "aten.lt", "aten.le", "aten.gt",
    "aten.ge", "aten.logical_and", "aten.logical_or", "aten.logical_not", "aten.bitwise_and",
    "aten.bitwise_or", "aten.bitwise_not", "aten.isnan", "aten.rsub", "aten.lerp",
    "aten.addcmul", "aten.addcdiv", "aten.logit", "aten.xlogy", "aten.special_xlogy",
    "aten.heaviside", "aten.nan_to_num", "aten.softsign", "aten.logsigmoid",
    "aten.log_sigmoid_forward", "aten.hardsigmoid_", "aten.bernoulli", "aten.dropout",
    "aten.native_dropout", "aten.true_divide", "aten.floor_divide", "aten.atan2",
}

# One operation per input element (of the first tensor argument).
REDUCTION = {
    "aten.sum", "aten.mean", "aten.amax", "aten.amin", "aten.max", "aten.min", "aten.argmax",
    "aten.argmin", "aten.prod", "aten.var", "aten.std", "aten.var_mean", "aten.std_mean",
    "aten.norm", "aten.linalg_vector_norm", "aten.cumsum", "aten.cumprod", "aten.logsumexp",
    "aten.all", "aten.any", "aten.cummax", "aten.cummin", "aten.nll_loss_forward",
    "aten.nll_loss", "aten.nll_loss2d_forward", "aten.sort", "aten.topk", "aten.kthvalue",
    "aten.median", "aten.mode", "aten.count_nonzero", "aten.max_pool1d", "aten.avg_pool1d",
}

# Operations per input element, for ops that make a few passes.
PER_INPUT_ELEMENT = {
    "aten._softmax": 5, "aten.softmax": 5, "aten._log_softmax": 5, "aten.log_softmax": 5,
    "aten.native_layer_norm": 5, "aten.layer_norm": 5, "aten.native_group_norm": 5,
    "aten.group_norm": 5, "aten.native_batch_norm": 5, "aten.batch_norm": 5,
    "aten._native_batch_norm_legit": 5, "aten._native_batch_norm_legit_no_training": 2,
    "aten._native_batch_norm_legit_functional": 5, "aten.instance_norm": 5,
    "aten.rms_norm": 4, "aten._fused_rms_norm": 4, "aten.smooth_l1_loss": 3, "aten.huber_loss": 3,
    "aten.mse_loss": 3, "aten.l1_loss": 2, "aten.binary_cross_entropy": 4,
    "aten.binary_cross_entropy_with_logits": 6, "aten.kl_div": 4, "aten.soft_margin_loss": 4,
    "aten.cosine_similarity": 6, "aten.cosine_embedding_loss": 6,
}


def numel(shape):
    total = 1
    for n in shape:
        total *= int(n)
    return total


def first_tensor(values):
    import torch

    for v in values:
        if isinstance(v, torch.Tensor):
            return v
        if isinstance(v, (list, tuple)):
            inner = first_tensor(v)
            if inner is not None:
                return inner
    return None


def output_elements(out):
    import torch

    if isinstance(out, torch.Tensor):
        return out.numel()
    if isinstance(out, (list, tuple)):
        return sum(output_elements(v) for v in out)
    return 0


def matmul_flops(name, args):
    """2 m k n per product (a multiply and an add), as torch counts."""
    if name in ("aten.mm", "aten.matmul"):
        a, b = args[0], args[1]
        if a.dim() == 2 and b.dim() == 2:
            return 2 * a.shape[0] * a.shape[1] * b.shape[1]
        return None
    if name == "aten.addmm":
        a, b = args[1], args[2]
        return 2 * a.shape[0] * a.shape[1] * b.shape[1]
    if name == "aten.bmm":
        a, b = args[0], args[1]
        return 2 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
    if name == "aten.baddbmm":
        a, b = args[1], args[2]
        return 2 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
    if name in ("aten.mv", "aten.addmv"):
        a = args[0] if name == "aten.mv" else args[1]
        return 2 * a.shape[0] * a.shape[1]
    if name in ("aten.dot", "aten.vdot"):
        return 2 * args[0].numel()
    return None


def conv_flops(args, out):
    """2 per multiply-add: batch x prod(weight) x the positions the kernel
    visits (the output's for a convolution, the input's for a transposed
    one), as torch's counter does."""
    x, w = args[0], args[1]
    transposed = bool(args[6]) if len(args) > 6 else False
    spatial = x.shape[2:] if transposed else out.shape[2:]
    return 2 * x.shape[0] * numel(w.shape) * numel(spatial)


def formula(name, args, out):
    """kgym's count for one op, or None when it has no formula."""
    if name in MOVEMENT:
        return 0
    flops = matmul_flops(name, args)
    if flops is not None:
        return flops
    if name in ("aten.convolution", "aten._convolution", "aten.conv1d", "aten.conv2d", "aten.conv3d",
                "aten.mkldnn_convolution", "aten._slow_conv2d_forward", "aten.slow_conv3d_forward",
                "aten.convolution_overrideable", "aten.conv_transpose1d", "aten.conv_transpose2d",
                "aten.conv_transpose3d"):
        return conv_flops(args, out if not isinstance(out, (list, tuple)) else out[0])
    if name in POINTWISE:
        return output_elements(out)
    tensor = first_tensor(args)
    if name in REDUCTION:
        return tensor.numel() if tensor is not None else 0
    if name in PER_INPUT_ELEMENT:
        return PER_INPUT_ELEMENT[name] * (tensor.numel() if tensor is not None else 0)
    if name in ("aten.avg_pool2d", "aten.avg_pool3d", "aten.max_pool2d_with_indices",
                "aten.max_pool3d_with_indices", "aten.max_pool2d", "aten.max_pool3d",
                "aten.adaptive_avg_pool2d", "aten._adaptive_avg_pool2d", "aten.adaptive_avg_pool3d",
                "aten._adaptive_avg_pool3d", "aten.adaptive_max_pool2d", "aten.mean_pool"):
        # Each output element reads its window: the window's size per element.
        o = out[0] if isinstance(out, (list, tuple)) else out
        window = args[1] if len(args) > 1 else None
        if isinstance(window, (list, tuple)) and window:
            size = numel(window) if len(window) > 1 else int(window[0]) ** (tensor.dim() - 2)
            return o.numel() * size
        return tensor.numel() if tensor is not None else o.numel()
    return None


# ---------------------------------------------------------------- counting


def torch_counter():
    """(FlopCounterMode, the op packets it counts), or (None, set()) where
    this torch has none."""
    try:
        from torch.utils.flop_counter import FlopCounterMode, flop_registry
    except ImportError:
        return None, set()
    return FlopCounterMode, set(flop_registry)


def op_packet_name(func):
    text = str(getattr(func, "overloadpacket", func))
    return text


def unique_tensor_bytes(tensors):
    """Bytes of the distinct storages among `tensors` (a weight tied twice
    is read once)."""
    seen, total = set(), 0
    for t in tensors:
        key = (t.data_ptr(), t.numel(), t.dtype) if t.numel() else (id(t),)
        if key in seen:
            continue
        seen.add(key)
        total += t.numel() * t.element_size()
    return total


def flat_tensors(values):
    import torch

    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(flat_tensors(v))
        elif isinstance(v, dict):
            out.extend(flat_tensors(list(v.values())))
    return out


def count_work(model, inputs, forward):
    """The work of `forward(inputs)` (model already built and loaded at the
    verified precision): a dict with bytes, flops, the counter used and the
    ops that were not counted (the
    record's form, core/roofline.h)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    counter_cls, registry = torch_counter()
    kgym_flops = [0]
    uncounted = collections.Counter()
    counted_by_kgym = collections.Counter()

    class KgymCounter(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            packet = getattr(func, "overloadpacket", None)
            if packet is not None and packet in registry:
                return out  # torch's counter counts it
            name = op_packet_name(func)
            try:
                flops = formula(name, args, out)
            except Exception:  # an op whose arguments the formula misread
                flops = None
            if flops is None:
                uncounted[name] += 1
            else:
                kgym_flops[0] += int(flops)
                counted_by_kgym[name] += 1
            return out

    with torch.no_grad():
        if counter_cls is not None:
            torch_mode = counter_cls(display=False)
            with torch_mode, KgymCounter():
                output = forward(inputs)
            torch_flops = int(torch_mode.get_total_flops())
        else:
            with KgymCounter():
                output = forward(inputs)
            torch_flops = 0
    outputs = flat_tensors([output])
    input_tensors = flat_tensors(list(inputs))
    state = list(model.parameters()) + list(model.buffers())
    dtypes = sorted({str(t.dtype).replace("torch.", "") for t in input_tensors + outputs + state
                     if t.is_floating_point()})
    return {
        "bytes_by": {
            "inputs": unique_tensor_bytes(input_tensors),
            "parameters": unique_tensor_bytes(state),
            "outputs": unique_tensor_bytes(outputs),
        },
        "flops": torch_flops + kgym_flops[0],
        "flops_torch_counter": torch_flops,
        "counter": "torch.utils.flop_counter and kgym's formulas" if counter_cls is not None
        else "kgym's formulas",
        "uncounted_ops": dict(uncounted),
        "float_dtypes": dtypes,
    }


def op_work(side, header, payloads):
    """The reference worker's `work` request (docs/worker-protocol.md): one
    forward on get_inputs() drawn under `seed`, counted, untimed."""
    import torch

    if side.problem is None:
        raise WorkerError("protocol", "work before load")
    torch.manual_seed(int(header["seed"]))
    try:
        inputs = side.backend.to_device(list(side.problem.get_inputs()))
    except Exception as exc:
        raise WorkerError("reference", f"get_inputs failed: {exception_line(exc)}", traceback_tail(exc))
    try:
        work = count_work(side.model, inputs, side.forward)
    except Exception as exc:
        raise WorkerError("reference", f"counting the work failed: {exception_line(exc)}", traceback_tail(exc))
    return {"work": work}, []
