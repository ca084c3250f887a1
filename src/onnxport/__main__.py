"""``python -m onnxport`` runs the command-line interface."""

from onnxport.cli import main

main()
