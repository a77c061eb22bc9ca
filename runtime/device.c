/* device.c: opening and closing a simulated device. */
#include "rt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

rt_device *rt_open_config(const chip_config *cfg, char *err, size_t errlen)
{
    if (!host_is_little_endian()) {
        isa_errf(err, errlen, "rt_open: the runtime needs a little-endian host");
        return NULL;
    }
    char why[512];
    if (chip_config_check(cfg, why, sizeof why)) {
        isa_errf(err, errlen, "rt_open: %s", why);
        return NULL;
    }
    rt_device *dev = calloc(1, sizeof *dev);
    if (!dev) {
        isa_errf(err, errlen, "rt_open: out of host memory");
        return NULL;
    }
    dev->cfg = *cfg;
    dev->sim = sim_create(&dev->cfg);
    dev->free_list = malloc(16 * sizeof *dev->free_list);
    if (!dev->sim || !dev->free_list) {
        isa_errf(err, errlen, "rt_open: out of host memory creating the simulated chip");
        rt_close(dev);
        return NULL;
    }
    dev->capfree = 16;
    dev->free_list[0] = (rt_block){0, cfg->dram_bytes};
    dev->nfree = 1;
    return dev;
}

rt_device *rt_open(const char *config_path, char *err, size_t errlen)
{
    chip_config cfg;
    char msg[512];
    if (chip_config_load(config_path, &cfg, msg, sizeof msg)) {
        isa_errf(err, errlen, "%s", msg);
        return NULL;
    }
    return rt_open_config(&cfg, err, errlen);
}

void rt_close(rt_device *dev)
{
    if (!dev)
        return;
    while (dev->programs)
        rt_unload(dev->programs);
    if (dev->sim)
        sim_destroy(dev->sim);
    free(dev->free_list);
    free(dev->used);
    free(dev->sched);
    free(dev->stage);
    free(dev);
}

const chip_config *rt_config(const rt_device *dev)
{
    return &dev->cfg;
}

sim *rt_sim(rt_device *dev)
{
    return dev->sim;
}

void rt_set_options(rt_device *dev, const sim_options *opt)
{
    sim_set_options(dev->sim, opt);
}
