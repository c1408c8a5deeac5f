"""A small PyTorch training loop on an rmm-rs pool, its allocation history saved as a snapshot.

Open the snapshot at pytorch.org/memory_viz, or draw its active-memory timeline with
``python python/tools/snapshot_timeline.py snapshot.pickle timeline.svg``.

    python examples/python/snapshot_training.py [snapshot.pickle]
"""

import sys

import torch

import rmm
import rmm.memory
from rmm.allocators.torch import rmm_torch_allocator

rmm.reinitialize(pool_allocator=True, initial_pool_size="256MiB")
torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
rmm.memory._record_memory_history(max_entries=100_000)

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 512)
).cuda()
optimizer = torch.optim.Adam(model.parameters())
for step in range(12):
    batch = 256 * (1 + step % 4)  # varied shapes, as in real training
    x = torch.randn(batch, 512, device="cuda")
    loss = (model(x) - x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.cuda.synchronize()

path = sys.argv[1] if len(sys.argv) > 1 else "snapshot.pickle"
rmm.memory._dump_snapshot(path)
print(f"loss {loss.item():.4f}; snapshot in {path}")
