# y = exp(x) for one stick (docs/isa.md's worked example), with a loop,
# a kernel, a constant tensor and a graph: every directive once
.config spyre-4core ncores=4 lx=262144 stick=128
.weights 128
.tensor w weight f32 1x64 dev=dl16 at=0 const=0
.tensor x input f16 1x64          ; DRAM 0x80..0xff
.tensor y output f16 1x64 stick=1 bytes=128
.dram 512
.const 00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9e0e7eef5fc030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dce3eaf1f8ff060d141b222930373e454c535a61686f767d848b9299a0a7aeb5bcc3cad1d8dfe6edf4fb020910171e252c333a41484f565d646b7279
.graph input %x: f16[1, 64]
.graph %y: f16[1, 64] = aten.exp.default(%x)
.graph output %y

.core 0
.kernel exp
  li r=1 v=0x80
  loop n=2
    dma.ld d=0x0 a=r1+0x0
    addi r=1 v=-0
  endl
  sig u=dmai t=0
  wait u=sfp0 t=0
  sfp.exp d=0x80 a=0x0 t=dl16 n0=1 ds0=128
  sfp.add bm=imm d=0x80 a=0x80 imm=1.5e-3
  sfp.rsum f=lanes d=0x100 a=0x80 vl=64
  sig u=sfp0 t=1
  wait u=dmao t=1
  dma.st d=0x100 a=0x80
.endkernel
  fence
  bar
  halt
.core 1
  pt.mm d=0x800 a=0x0 b=0x400 p=0x1000 f=acc|f32 m=8 n=64 k=64
  ring.send core=2 d=0x0 a=0x0 tok=3
  bar
  halt
