// inside low: not for the folders above
