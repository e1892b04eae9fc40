"""Tuning a fine-tuning run: hyper-parameter search and the learning-rate range test."""
