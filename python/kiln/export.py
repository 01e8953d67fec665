"""kiln.export: an nn.Module to the .pt2 archive kiln-compile reads.

It is torch.export.export followed by torch.export.save: the archive holds
the graph as JSON in torch's serialization schema and the weights as raw
bytes, which Kiln's C++ importer reads without Python (no pickle)."""
import os


def export(module, example_inputs, path, dynamic_shapes=None, decompose=False):
    """Exports `module` (put in eval mode) on `example_inputs` (a tuple) to
    `path`. `dynamic_shapes` is torch.export's (torch.export.Dim bounds become
    Kiln's symbol bounds); `decompose=True` saves the core ATen opset
    (run_decompositions) instead of the default export's ops. Returns path."""
    import torch
    if not isinstance(example_inputs, tuple):
        example_inputs = tuple(example_inputs) if isinstance(example_inputs, list) else (example_inputs,)
    module = module.eval()
    with torch.no_grad():
        ep = torch.export.export(module, example_inputs, dynamic_shapes=dynamic_shapes)
        if decompose:
            ep = ep.run_decompositions()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    torch.export.save(ep, path)
    return path
