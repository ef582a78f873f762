#!/usr/bin/python3
"""Writes the small ONNX models the tessera-compile command-line test uses. Usage: OUT_DIR"""
import os
import sys

import onnx
from onnx import TensorProto, helper


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    relu = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])
    save(helper.make_model(relu, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(out, "relu.onnx"))
    soft = helper.make_graph([helper.make_node("Softplus", ["x"], ["y"], name="smooth")], "g", [x], [y])
    save(helper.make_model(soft, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "unsupported.onnx"))
    with open(os.path.join(out, "garbage.onnx"), "wb") as f:
        f.write(b"\x08\x07\x12\xff\xff\xff\xff\x0fnot a model at all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
