# suanli 0.1.0 perf infer: llama-3.1-70b on 4 x h100-sxm (TP=4 PP=1), weights fp8, KV cache fp8, batch 804 (the most that fit), 1000 + 1000 tokens
# predicted: prefill of the batch 35.07 s, TPOT 68.81 ms, 1936 output tokens/s per GPU
# SGLang sizes its KV cache pool with --mem-fraction-static, which by default leaves several GB of each GPU for activations and CUDA graphs, so it may admit fewer sequences
python -m sglang.launch_server \
  --model-path meta-llama/Llama-3.1-70B \
  --tp-size 4 \
  --context-length 2000 \
  --max-running-requests 804 \
  --chunked-prefill-size 8192 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3
