/* The peripherals of the Arm MPS2 FPGA image AN385 (Cortex-M3 at 25 MHz) that port_mps2_an385.c uses, as
 * QEMU's mps2-an385 machine models them (hw/arm/mps2.c) and Arm's AN385 application note documents. */
#ifndef FW_MPS2_AN385_BOARD_H
#define FW_MPS2_AN385_BOARD_H
#include <stdint.h>

#define SYSCLK_HZ 25000000u

/* CMSDK APB UART */
struct cmsdk_uart {
    volatile uint32_t data;
    volatile uint32_t state;        /* 1 TX full, 2 RX full, 4 TX overrun, 8 RX overrun (write 1 to clear) */
    volatile uint32_t ctrl;         /* 1 TX enable, 2 RX enable, 4 TX int, 8 RX int, 0x20 RX overrun int */
    volatile uint32_t intstatus;    /* read: pending; write 1: clear. 1 TX, 2 RX, 4 TX overrun, 8 RX overrun */
    volatile uint32_t bauddiv;      /* SYSCLK / baud, at least 16 */
};
#define UART_STATE_TXFULL 1u
#define UART_STATE_RXFULL 2u
#define UART_STATE_RXOVR 8u
#define UART_CTRL_TXEN 1u
#define UART_CTRL_RXEN 2u
#define UART_CTRL_TXINT 4u
#define UART_CTRL_RXINT 8u
#define UART_INT_TX 1u
#define UART_INT_RX 2u
#define UART_INT_RXOVR 8u

/* CMSDK APB timer: a 32-bit down counter at SYSCLK, reloaded from `reload` when it passes 0 */
struct cmsdk_timer {
    volatile uint32_t ctrl;         /* 1 enable, 8 interrupt enable */
    volatile uint32_t value;
    volatile uint32_t reload;
    volatile uint32_t intstatus;    /* read: it passed 0; write 1: clear */
};
#define TIMER_CTRL_EN 1u
#define TIMER_CTRL_INTEN 8u

#define UART0 ((struct cmsdk_uart *)0x40004000u)      /* the protocol link */
#define UART1 ((struct cmsdk_uart *)0x40005000u)      /* the debug console */
#define TIMER0 ((struct cmsdk_timer *)0x40000000u)    /* the microsecond counter */
#define TIMER1 ((struct cmsdk_timer *)0x40001000u)    /* the wake-up for the next deadline */
/* FPGA I/O: LEDs (bits 0-1) and push buttons (bits 0-1) of the board */
#define FPGAIO_LED (*(volatile uint32_t *)0x40028000u)
#define FPGAIO_BUTTON (*(volatile uint32_t *)0x40028008u)

/* NVIC interrupt numbers of AN385 */
#define IRQ_UART0_RX 0
#define IRQ_UART0_TX 1
#define IRQ_TIMER0 8
#define IRQ_TIMER1 9
#define NVIC_ISER (*(volatile uint32_t *)0xE000E100u)

static inline uint32_t irq_save(void)
{
    uint32_t primask;
    __asm volatile ("mrs %0, primask\n cpsid i" : "=r"(primask) : : "memory");
    return primask;
}

static inline void irq_restore(uint32_t primask)
{
    __asm volatile ("msr primask, %0" : : "r"(primask) : "memory");
}

#endif
