# predicted: step 53.161 s, 78897 tokens/s (1233 per GPU), MFU 60.0%, 82.7 GB per GPU, 146.7 days to train (225328 GPU-hours)
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
    --pipeline-model-parallel-size 2 \
    --num-layers-per-virtual-pipeline-stage 20 \
    --context-parallel-size 4 \
    --sequence-parallel \
    --use-distributed-optimizer \
    --grad-reduce-in-bf16 \
    --overlap-grad-reduce \
    --overlap-param-gather \
    --group-query-attention \
    --num-query-groups 8 \
    --swiglu \
    --normalization RMSNorm \
    --position-embedding-type rope \
    --untie-embeddings-and-output-weights \
    --bf16 \
    --use-flash-attn \
    --train-iters 238419
