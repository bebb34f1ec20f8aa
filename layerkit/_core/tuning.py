"""Constants tuned on the project's 2-core machine, in one place.

Block sizes, thread thresholds, cache sizes, chunk sizes and parallel cut-offs that were
chosen by measurement (or, where marked, by judgement with no figure recorded) on the
2-core boxes of /work/shared/FACTS.md. Each sits next to the benchmark that sets it
(``benchmarks/*.py`` and the case) and the figure; re-run that benchmark before
changing one, and on a machine with more cores expect some to move. The modules that
use them import them from here (``from layerkit._core.tuning import X``); values that
define a file format or a result (checkpoint block, shuffle draw block, cache and
``Dataset.save`` blocks) stay with their format.

This module imports nothing, so any layer may import it (the kernels too).
"""

# ---- elementwise kernels (layerkit/kernels/activation.py, special.py) ------------------
# benchmarks/bench_gelu.py (4M float32, exact and tanh gelu forward + gradient): one
# thread is fastest with 32k-element blocks (five 128 KB buffers stay in L2); threads
# want fewer, larger blocks, since every ufunc call re-acquires the GIL and a busy
# hand-off costs more than the cache misses of 512 KB blocks.
NN_BLOCK = 32768
NN_BLOCK_THREADED = 131072
# Below this many elements, thread hand-offs cost more than they save (bench_gelu.py,
# --threads 2; two threads: 4M gelu 15.7 -> 11.6 ms).
NN_PARALLEL_MIN = 1 << 20
# erf blocks of 128 KB: 1M float32 erf about 8 ms instead of 21 ms with whole-array
# temporaries (lk.math.erf on 1M float32; float64 about 32 ms per 1M).
ERF_BLOCK_BYTES = 1 << 17

# ---- eager scalar operands (layerkit/primitives/elementwise.py) ------------------------
# Cached 0-d float32 stand-ins for Python scalars: ``a * 2`` on (128, 32) float32 0.91 us
# with NumPy's scalar cast, 0.52 us with a cached operand (timeit of the operator, as in
# bench_eager.py's per-op loop). The bound only caps memory (the distinct scalars of a
# program); no figure recorded for 256 itself.
F32_SCALARS_MAX = 256

# ---- lru caches of op planning (layerkit/primitives) -----------------------------------
# Memoised shape/axis computations keyed by shapes; the sizes bound memory and were set
# by judgement (no figure recorded): a model has far fewer distinct shapes than these.
BROADCAST_CACHE = 4096   # broadcast.py: axes that sum a gradient down to an input's shape
REDUCE_AXES_CACHE = 1024  # reduce.py: normalised reduction axes
EINSUM_CACHE = 512       # linalg.py: einsum equations in explicit form
RESIZE_CACHE = 256       # image.py: resize source indices and weights per axis

# ---- convolutions (layerkit/kernels/conv.py, conv_nd.py, scratch.py) ---------------------
# benchmarks/bench_conv.py (the issue-3 CNN and DCGAN layer shapes, one and two threads):
# up to this many input channels, patches built transposed (one plane copy per tap) beat
# strided window copies: 5x faster for 28x28x1.
CONV_FEW_CHANNELS = 3
# Target size of a batch chunk's largest temporary: the working set stays near the L2/L3
# sizes instead of growing with the batch (a full im2col of a 7x7 kernel over 128
# channels at batch 64, 28x28 would be 1.26 GB). bench_conv.py; 4 MiB chosen among
# 1-16 MiB, no per-size figure recorded.
CONV_CHUNK_BYTES = 4 << 20
# fused_conv2d keeps its im2col patch matrix (for a one-GEMM filter gradient) up to this
# size (bench_training.py CNN step: 3 records -> 1 per layer); larger ones are recomputed.
CONV_KEEP_PATCH_BYTES = 16 << 20
# plan()'s cost model: GEMM flops that cost as much as moving one float outside the GEMM
# (bench_conv.py, the algorithm chosen per layer shape; no figure recorded for 16).
CONV_FLOPS_PER_FLOAT = 16
# Per-thread scratch buffers (conv patches, frames) kept beyond this are evicted least
# recently used first (bench_dcgan.py, bench_training.py CNN: the largest layer's
# buffers fit; no figure recorded for the bound itself).
SCRATCH_MAX_BYTES = 48 << 20

# ---- lk.function's fused regions (layerkit/autodiff/function/numexpr_kernel.py) ------------
# benchmarks/bench_function.py --dispatch (numexpr 2.14 without VML, 2 threads; us per
# call, inline ufuncs with reused out= / block-wise ufuncs / one numexpr expression):
#   float32, 4 arithmetic ops:  16k 11 / 19 / 71      256k 557 / 421 / 755
#                                1M 1806 / 1316 / 2195  4M 11072 / 10247 / 13877
#   float32, 4 ops with tanh/exp: 128k 293 / 400 / 3510   1M 3094 / 2263 / 29021
#   float64, 4 arithmetic ops:  256k 1845 / 849 / 1069   1M 7294 / 4425 / 4942
#                                4M 41949 / 29199 / 27559
#   float64, 8 arithmetic ops:  1M 5775 / 3186 / 6811    4M 95795 / 46343 / 45990
#   float64, 8 ops with tanh/exp: 1M 8503 / 6527 / 22250
# numexpr only ties or wins for float64 arithmetic regions of NE_MIN_OPS ops from
# NE_MIN_SIZE elements; block-wise NumPy beats whole-array ufuncs from BLOCK_MIN_SIZE
# elements, in blocks of BLOCK_ELEMS.
NE_MIN_OPS = 4
NE_MIN_SIZE = 1 << 22
BLOCK_MIN_SIZE = 1 << 18
BLOCK_ELEMS = 1 << 14

# ---- optimizers (layerkit/optimizers/optimizer.py) ------------------------------------------
# Arrays above this many elements are updated block by block: a 400k-element Adam update
# 1.72 ms whole, 1.15-1.28 ms in blocks of 32-64k elements (bench_training.py MLP step).
OPTIMIZER_BLOCK = 32768
# Variables up to this size share flat buffers with the others of their dtype, one kernel
# call for all (a ufunc call costs ~1 us; bench_training.py MLP step, biases and small
# kernels). No figure recorded for the bound itself.
OPTIMIZER_GROUP_MAX = 65536

# ---- input pipelines (layerkit/data) ---------------------------------------------------------
# Full batches sliced at once by the fused batch-then-map loop (map_fused.py): one reshape
# per block instead of one slice per batch per leaf (bench_data.py batch-first case; no
# per-size figure recorded).
FUSED_MAP_BLOCK = 256
# Parallel map: at most this many elements submitted but not delivered (the memory bound;
# chunk sizes adapt below it). bench_data.py parallel cases; no per-size figure recorded.
PARALLEL_MAP_IN_FLIGHT = 256
# Parquet/Arrow sources read record batches of this many rows: converting 65,536-row
# batches once and handing out 1024-row slices reached 18.5M rows/s at 132 MB RSS on a
# 195 MB file (bench_data.py parquet case, FACTS.md).
ARROW_READ_BATCH = 65536
# Row groups whose selected columns take at most this many bytes are read in one call:
# read_row_group 20M rows/s against 15M rows/s for iter_batches of 65,536 rows
# (bench_data.py parquet case); bigger ones stream, so memory stays bounded.
ARROW_WHOLE_GROUP_BYTES = 64 << 20
# prefetch(AUTOTUNE) runs inline while both sides take less than INLINE_BELOW seconds per
# element and moves to its thread when one takes more than THREAD_ABOVE: handing an
# element to or from a thread costs 5-15 us here (bench_data.py prefetch cases).
PREFETCH_INLINE_BELOW = 30e-6
PREFETCH_THREAD_ABOVE = 60e-6
# An AUTOTUNE prefetch buffer grows to at most this many elements and this many bytes
# (bench_data.py prefetch cases; set by judgement, no figure recorded).
PREFETCH_MAX_AUTOTUNE_BUFFER = 64
PREFETCH_RAM_BUDGET = 256 << 20

# ---- checkpoints (layerkit/checkpoint/format.py) -----------------------------------------------
# Files above this size are flushed and checksummed by a helper thread overlapping the
# writes; arrays are read in slabs of up to CHECKPOINT_SLAB bytes (bench_checkpoint.py,
# 120 MB of arrays: write + fsync 1.94 GB/s, read 3.0 GB/s; no per-size figure recorded).
CHECKPOINT_OVERLAP_BYTES = 4 << 20
CHECKPOINT_SLAB = 16 << 20

# ---- lk.distribute gradient reduction (layerkit/distribute/_reduce.py) ---------------------------
# Arrays of at least this size are reduced on their own without a copy; smaller ones are
# packed into buckets of DEFAULT_PACK_BYTES (bench_distributed.py --allreduce-only: below
# 4 MiB the second phase of a separate reduction cost more than the packing copy; 16 MiB
# buckets beat 4 MiB ones; a 2-rank Allreduce of 16 MB float32 takes ~2.8 ms, FACTS.md).
DISTRIBUTE_LARGE_BYTES = 1 << 22
DISTRIBUTE_PACK_BYTES = 1 << 24
