# predicted: step 54.382 s, 77127 tokens/s (1205 per GPU), MFU 58.6%, 85.2 GB per GPU, 150.1 days to train (230501 GPU-hours)
# add your data and tokenizer arguments; the estimate used llama-3.1-70b's vocabulary of 128256
torchrun --nnodes=8 --nproc-per-node=8 --node-rank="${NODE_RANK:-0}" \
  --master-addr="${MASTER_ADDR:-localhost}" --master-port="${MASTER_PORT:-29500}" \
  pretrain_gpt.py \
    --num-layers 80 \
    --hidden-size 8192 \
    --num-attention-heads 64 \
    --ffn-hidden-size 28672 \
    --seq-length 8192 \
    --max-position-embeddings 131072 \
    --micro-batch-size 1 \
    --global-batch-size 512 \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 4 \
    --num-layers-per-virtual-pipeline-stage 4 \
    --context-parallel-size 2 \
    --disable-bias-linear \
    --attention-dropout 0 \
    --hidden-dropout 0 \
    --sequence-parallel \
    --use-distributed-optimizer \
    --grad-reduce-in-bf16 \
    --overlap-grad-reduce \
    --overlap-param-gather \
    --cross-entropy-loss-fusion \
    --recompute-granularity selective \
    --recompute-modules layernorm \
    --group-query-attention \
    --num-query-groups 8 \
    --swiglu \
    --normalization RMSNorm \
    --position-embedding-type rope \
    --untie-embeddings-and-output-weights \
    --bf16 \
    --use-flash-attn \
    --train-iters 238419
