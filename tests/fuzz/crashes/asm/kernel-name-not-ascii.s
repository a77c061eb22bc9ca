.core 0
.kernel ké
nop
.endkernel
halt
