#!/usr/bin/env bash
# Controlled re-runs of docs/reproduction.md: one protocol choice changed at a time, on units
# that are also in the main sweep (credit_g and adult at 5,000 rows; logreg, random_forest,
# catboost, mlp; seeds 0-2), then the side-by-side comparison. Resumable; run from the
# repository root after `python scripts/reproduce_paper.py run --out results/reproduction ...`.
set -euo pipefail
cd "$(dirname "$0")/.."
run="python3 scripts/reproduce_paper.py run --datasets credit_g,adult --seeds 0,1,2 --max-rows 2000 --rows adult=5000"
models=logreg,random_forest,catboost,mlp
out=results/controlled
$run --models $models --out $out/mild_channel --masking-rates 0.1 --dropout-rates 0.1 --noise-scales 0.1 --draws 1
$run --models $models --out $out/harsh_channel --masking-rates 0.1,0.2,0.3 --dropout-rates 0.1,0.2,0.3 \
    --noise-scales 0.1,0.25,0.5 --draws 5
$run --models $models --out $out/depth10 --depth 10
$run --models $models --out $out/population_all --population all
$run --models random_forest --out $out/rf_min_leaf5 --model-params '{"random_forest": {"min_samples_leaf": 5}}'
python3 scripts/reproduce_paper.py compare --base results/reproduction --out $out/compare.md --variants \
    $out/mild_channel $out/harsh_channel $out/depth10 $out/population_all $out/rf_min_leaf5
