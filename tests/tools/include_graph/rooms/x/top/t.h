// top
