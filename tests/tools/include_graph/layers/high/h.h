// high
