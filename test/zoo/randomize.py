"""Random weights that matter: a model built without pretrained weights
starts with parameters that switch parts of it off or make them trivial --
zero-initialized heads and last norms of residual branches, unit norm
weights, zero biases, layer scales of 1e-6 -- and BatchNorm statistics of
0 and 1. A comparison on such a model would not see a wrong branch. Here
every parameter that holds one value throughout is drawn again (matrices
and kernels from N(0, 1/fan_in), vectors and scalars around their value),
and BatchNorm statistics are measured on random batches.
"""


def make_weights_matter(model, spec, torch, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.numel() == 0 or not bool((p == p.reshape(-1)[0]).all()):
                continue
            if p.dim() >= 2:
                fan_in = p.numel() // p.shape[0]
                p.copy_(torch.randn(p.shape, generator=g) / max(fan_in, 1) ** 0.5)
            else:
                v = float(p.reshape(-1)[0])
                spread = 0.2 * max(abs(v), 0.25)
                p.copy_(v + spread * torch.randn(p.shape, generator=g))
    norms = [m for m in model.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.track_running_stats]
    if not norms or spec.batch_of is None:
        return
    # BatchNorm statistics: the cumulative average over random batches
    # (momentum None), in training mode, then back to evaluation.
    saved = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(*spec.batch_of(4, g))
    model.eval()
    for m, mom in zip(norms, saved):
        m.momentum = mom
