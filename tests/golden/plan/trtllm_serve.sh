# suanli 0.1.0 perf infer: llama-3.1-70b on 4 x h100-sxm (TP=4 PP=1), weights bf16, KV cache fp8, batch 596 (the most that fit), 1000 + 1000 tokens
# predicted: prefill of the batch 37.97 s, TPOT 72.29 ms, 1352 output tokens/s per GPU
# TensorRT-LLM sizes its KV cache from the memory left after the weights (--kv_cache_free_gpu_memory_fraction, 0.9 by default), so it may admit fewer sequences
cat > extra-llm-api-options.yml <<'EOF'
kv_cache_config:
  dtype: fp8
EOF
trtllm-serve meta-llama/Llama-3.1-70B \
  --backend pytorch \
  --tp_size 4 \
  --pp_size 1 \
  --max_batch_size 596 \
  --max_seq_len 2000 \
  --max_num_tokens 8192 \
  --extra_llm_api_options extra-llm-api-options.yml
