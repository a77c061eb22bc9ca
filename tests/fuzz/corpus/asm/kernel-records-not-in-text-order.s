# kernel records in another order than the text's (rec=), as a compiled
# program keeps them: kernel by kernel, where the text goes core by core
.config spyre-4core ncores=4
.core 0
.kernel k0 rec=0
  nop
.kernel k2 rec=3
  nop
.endkernel
  halt
.core 1
.kernel k0 rec=1
  nop
.kernel k1 rec=2
  nop
.endkernel
  halt
