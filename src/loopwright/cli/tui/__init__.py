"""The interactive terminal: input on prompt_toolkit and output with rich when both ends are a
terminal with colour, plain lines otherwise. Nothing here imports prompt_toolkit or rich at
module level: `loopwright -p` never loads them."""
