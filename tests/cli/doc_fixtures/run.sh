# checked against megatron@core_v0.19 (5be9626709 2026-08-19): passes scalemodel's 21 launch rules (docs/launch.md)
# scalemodel 0.1.0 -> Megatron-LM: Llama 3.1 70B on h100:8x64 (512 chips), plan dp=16,tp=8,pp=4,zero=1
# predicted (realistic mode): 8.23 s per step, MFU 43.6%, 995 tokens/s per chip, 29.6 GB of 80 GB HBM per chip
# run on each of the 64 hosts with NODE_RANK=0..63 and MASTER_ADDR = host 0's address (or srun with NODE_RANK=$SLURM_NODEID)
# add your data, tokenizer and checkpoint flags; the tokenizer sets the vocabulary (V = 128256)
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc-per-node 8 --nnodes 64 --node-rank ${NODE_RANK} --master-addr ${MASTER_ADDR} --master-port 29500 pretrain_gpt.py \
    --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 4 \
    --context-parallel-size 1 \
    --sequence-parallel \
    --use-distributed-optimizer \
    --overlap-grad-reduce \
    --overlap-param-gather \
    --micro-batch-size 1 \
    --global-batch-size 1024 \
    --seq-length 4096 \
    --max-position-embeddings 131072 \
    --num-layers 80 \
    --hidden-size 8192 \
    --ffn-hidden-size 28672 \
    --num-attention-heads 64 \
    --group-query-attention \
    --num-query-groups 8 \
    --swiglu \
    --untie-embeddings-and-output-weights \
    --position-embedding-type rope \
    --normalization RMSNorm \
    --disable-bias-linear \
    --rotary-base 500000 \
    --use-rope-scaling \
    --recompute-granularity selective \
    --bf16 \
    --grad-reduce-in-bf16 \
    --cross-entropy-loss-fusion
