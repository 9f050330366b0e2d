// low: what the folders above include
