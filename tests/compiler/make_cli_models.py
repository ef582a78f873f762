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
    # A 3x3 convolution oneDNN can compute with Winograd (tests/tools: the load's log line).
    cx = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 16, 16])
    cy = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 16, 16])
    w = helper.make_tensor("w", TensorProto.FLOAT, [32, 16, 3, 3], [((i * 7) % 13 - 6) / 64.0 for i in range(32 * 16 * 9)])
    conv = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])],
                             "g", [cx], [cy], initializer=[w])
    save(helper.make_model(conv, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(out, "conv.onnx"))
    with open(os.path.join(out, "garbage.onnx"), "wb") as f:
        f.write(b"\x08\x07\x12\xff\xff\xff\xff\x0fnot a model at all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
