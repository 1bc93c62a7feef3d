import torch

from fedfit.training.program import clear_grads


def _with_grads() -> tuple[torch.nn.Linear, torch.optim.SGD]:
    layer = torch.nn.Linear(3, 2)
    layer(torch.ones(4, 3)).sum().backward()
    return layer, torch.optim.SGD(layer.parameters(), lr=0.1)


def test_clear_grads_sets_every_gradient_to_none_as_zero_grad_does() -> None:
    layer, opt = _with_grads()
    assert all(p.grad is not None for p in layer.parameters())
    clear_grads(opt)
    assert all(p.grad is None for p in layer.parameters())


def test_clear_grads_leaves_tensors_outside_the_optimiser_alone() -> None:
    layer, _ = _with_grads()
    opt = torch.optim.SGD([layer.weight], lr=0.1)
    clear_grads(opt)
    assert layer.weight.grad is None and layer.bias.grad is not None


def test_an_optimiser_with_its_own_zero_grad_gets_it_called() -> None:
    calls: list[bool] = []

    class Counting(torch.optim.SGD):
        def zero_grad(self, set_to_none: bool = True) -> None:
            calls.append(set_to_none)

    layer, _ = _with_grads()
    clear_grads(Counting(layer.parameters(), lr=0.1))
    assert calls == [True] and layer.weight.grad is not None
