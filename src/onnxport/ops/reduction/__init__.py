"""Reductions along dims, cumulative scans, order/moment statistics and histograms.

The modules are imported and registered by :mod:`onnxport.ops`."""
