/* Reset and the vector table of the Cortex-M3 on AN385: copy .data from flash, zero .bss, run main.
 * No heap and no C library start-up: main is all there is. */
#include <stdint.h>

extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[], __stack_top[];
int main(void);
void uart0_rx_isr(void);
void uart0_tx_isr(void);
void timer0_isr(void);
void timer1_isr(void);

void reset_handler(void)
{
    uint32_t *src = __data_load, *dst = __data_start;
    while (dst < __data_end)
        *dst++ = *src++;
    for (dst = __bss_start; dst < __bss_end; dst++)
        *dst = 0;
    main();
    for (;;)
        ;
}

/* a fault or an interrupt nobody enabled: stop here, where a debugger finds it; the harness sees a unit
 * that stopped answering */
static void stop(void)
{
    for (;;)
        ;
}

typedef void (*vector)(void);

__attribute__((section(".vectors"), used))
static const vector vectors[16 + 32] = {
    (vector)(uintptr_t)__stack_top,
    reset_handler,
    stop, stop, stop, stop, stop,               /* NMI, HardFault, MemManage, BusFault, UsageFault */
    0, 0, 0, 0,
    stop, stop, 0, stop, stop,                  /* SVCall, DebugMon, -, PendSV, SysTick */
    /* IRQ 0.. */
    uart0_rx_isr, uart0_tx_isr, stop, stop, stop, stop, stop, stop,
    timer0_isr, timer1_isr, stop, stop, stop, stop, stop, stop,
    stop, stop, stop, stop, stop, stop, stop, stop,
    stop, stop, stop, stop, stop, stop, stop, stop,
};
