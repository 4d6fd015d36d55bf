# suanli 0.1.0 perf infer: llama-3.1-70b on 4 x h100-sxm (TP=4 PP=1), weights fp8, KV cache fp8, batch 804 (the most that fit), 1000 + 1000 tokens
# predicted: prefill of the batch 35.07 s, TPOT 68.81 ms, 1936 output tokens/s per GPU
# vLLM keeps 10% of each GPU free by default (--gpu-memory-utilization 0.9), so it may admit fewer sequences
vllm serve meta-llama/Llama-3.1-70B \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 1 \
  --max-model-len 2000 \
  --max-num-seqs 804 \
  --quantization fp8 \
  --kv-cache-dtype fp8
